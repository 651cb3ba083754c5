import { WORKLOADS } from '../workloads/workload-specs';
import { figures, findCell, type BenchResults } from './results';
import { formatCount } from './markdown-report';

/** Bar colours by role and peer: the library stands out, the floor is grey. */
const COLOURS: Record<string, string> = {
  library: '#e0234e',
  'library-borrowed': '#f08a9f',
  'library-borrowed-ioredis5': '#c2185b',
  'library-borrowed-ioredis6': '#f8bbd0',
  redlock: '#3b6ea5',
  'redis-semaphore': '#5a9e4b',
  raw: '#9e9e9e',
};

const WIDTH = 960;
const COLUMNS = 2;
const PANEL_WIDTH = WIDTH / COLUMNS;
const LABEL_WIDTH = 230;
const VALUE_WIDTH = 70;
const BAR_HEIGHT = 18;
const BAR_GAP = 6;
const PANEL_TOP = 30;
const PANEL_BOTTOM = 18;

/**
 * throughput.svg: one panel per workload (each with its own scale: 50/s and 60,000/s do not share an
 * axis), one horizontal bar per contestant with its median ops/s. Plain SVG, no dependency.
 */
export function throughputChart(results: BenchResults): string {
  const workloads = WORKLOADS.filter((workload) => results.options.workloads.includes(workload.id));
  const contestants = results.contestants;
  const panelHeight = PANEL_TOP + contestants.length * (BAR_HEIGHT + BAR_GAP) + PANEL_BOTTOM;
  const rows = Math.ceil(workloads.length / COLUMNS);
  const height = 40 + rows * panelHeight;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="12" y="24" font-size="15" font-weight="bold">Acquisitions per second (median of ${results.options.rounds}; longer is better)</text>`,
  ];
  workloads.forEach((workload, index) => {
    const x = (index % COLUMNS) * PANEL_WIDTH;
    const y = 40 + Math.floor(index / COLUMNS) * panelHeight;
    const values = contestants.map((contestant) => figures(results, workload.id, contestant.id)?.opsPerSec);
    const max = Math.max(1, ...values.map((value) => value ?? 0));
    const barSpace = PANEL_WIDTH - LABEL_WIDTH - VALUE_WIDTH - 16;
    parts.push(`<text x="${x + 12}" y="${y + 18}" font-weight="bold">${escapeXml(workload.title)}</text>`);
    contestants.forEach((contestant, row) => {
      const barY = y + PANEL_TOP + row * (BAR_HEIGHT + BAR_GAP);
      const value = values[row];
      const textY = barY + BAR_HEIGHT / 2 + 4;
      parts.push(
        `<text x="${x + LABEL_WIDTH}" y="${textY}" text-anchor="end" fill="#333">${escapeXml(contestant.label)}</text>`,
      );
      if (value === undefined) {
        // A contestant that sits the workload out by design says why (e.g. "not yet supported").
        // Only the gist ("not yet supported"): the parenthesis would run into the next panel.
        const skipped = findCell(results, workload.id, contestant.id)?.skipped;
        const why = workload.only ? skipped && '—' : skipped?.split(' (')[0];
        parts.push(`<text x="${x + LABEL_WIDTH + 8}" y="${textY}" fill="#999">${escapeXml(why ?? 'n/a')}</text>`);
        return;
      }
      const barWidth = Math.max(1, (value / max) * barSpace);
      const colour = COLOURS[contestant.id] ?? '#777777';
      parts.push(
        `<rect x="${x + LABEL_WIDTH + 8}" y="${barY}" width="${barWidth.toFixed(1)}" height="${BAR_HEIGHT}" fill="${colour}" rx="2"/>`,
      );
      parts.push(
        `<text x="${(x + LABEL_WIDTH + 14 + barWidth).toFixed(1)}" y="${textY}" fill="#333">${formatCount(value)}</text>`,
      );
    });
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
