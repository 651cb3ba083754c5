import type { LoadResult } from './transfer-load';

export interface RaceResult {
  readonly name: string;
  readonly load: LoadResult;
  readonly totalBefore: number;
  readonly totalAfter: number;
  /** How many accounts ended below zero. */
  readonly negative: number;
  readonly damaged: boolean;
  /** Runs of the scheduled interest job seen in the instances' logs during the load. */
  readonly interestRuns: readonly { readonly at: number; readonly port: number }[];
  /** Warnings and errors the instances logged during the load (the first few). */
  readonly problems: readonly string[];
}

/** The results side by side, as a plain-text table. */
export function printTable(results: readonly RaceResult[], planned: number): void {
  const header = [
    'run',
    'transfers',
    '201 ok',
    '409 busy',
    '422 overdraft',
    'failed',
    'total before',
    'total after',
    'difference',
    'negative balances',
    'duration',
  ];
  const rows = results.map((result) => [
    result.name,
    result.load.sent === planned ? String(planned) : `${result.load.sent} of ${planned}`,
    String(result.load.ok),
    String(result.load.busy),
    String(result.load.overdraft),
    String(result.load.failed),
    String(result.totalBefore),
    String(result.totalAfter),
    signed(result.totalAfter - result.totalBefore),
    String(result.negative),
    `${(result.load.durationMs / 1000).toFixed(1)} s`,
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  // The first column left-aligned, the numbers right-aligned (a Markdown table, pasteable as it is).
  const align = (cell: string, column: number): string =>
    column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]);
  const line = (cells: readonly string[]): string => `| ${cells.map(align).join(' | ')} |`;
  const rule = widths.map((width, column) => (column === 0 ? '-'.repeat(width + 2) : `${'-'.repeat(width + 1)}:`));
  console.log(line(header));
  console.log(`|${rule.join('|')}|`);
  for (const row of rows) console.log(line(row));
}

/**
 * One runner per cluster: every instance schedules the interest job every 10 s, and each tick should show
 * one run, by any one instance.
 */
export function printInterestRuns(results: readonly RaceResult[]): void {
  for (const result of results) {
    const ticks = new Map<number, number[]>();
    for (const run of result.interestRuns) {
      const tick = Math.floor(run.at / 10_000);
      ticks.set(tick, [...(ticks.get(tick) ?? []), run.port]);
    }
    if (ticks.size === 0) continue;
    const described = [...ticks.values()].map((ports) =>
      ports.length === 1 ? `port ${ports[0]}` : `ports ${ports.join(' and ')} (more than once!)`,
    );
    console.log(
      `[${result.name}] interest job (@Locked onBusy 'skip') ran at ${ticks.size} tick(s), by: ${described.join('; ')}`,
    );
  }
}

function signed(value: number): string {
  return value > 0 ? `+${value}` : String(value);
}
