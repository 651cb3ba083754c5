/** Distinct account ids per test, so tests sharing one Redis never see each other's accounts. */
let counter = 0;

export function accountId(label: string): string {
  counter++;
  return `${label}-${process.pid}-${counter}`;
}
