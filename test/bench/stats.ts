/** The value at quantile q (0..1) of `values`, nearest-rank; NaN for none. */
export function percentile(values: ArrayLike<number>, q: number): number {
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

/** A growable list of numbers without per-item allocation (latencies of a measurement). */
export class Samples {
  private data = new Float64Array(1024);
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(value: number): void {
    if (this.count === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.count++] = value;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.count);
  }

  percentile(q: number): number {
    return percentile(this.values(), q);
  }

  max(): number {
    let max = NaN;
    for (const value of this.values()) if (!(value <= max)) max = value;
    return max;
  }
}
