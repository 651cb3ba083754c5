/** Rotates the order each round, so no contestant always runs first (cold) or last (after the others). */
export function rotated<T>(items: readonly T[], by: number): T[] {
  if (items.length === 0) return [];
  const shift = by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}
