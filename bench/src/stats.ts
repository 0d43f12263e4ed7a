/** Summary statistics over repeated measurements. @module */

/** Median and spread of a set of samples. */
export interface Summary {
  median: number;
  /** 25th percentile. */
  p25: number;
  /** 75th percentile. */
  p75: number;
  min: number;
  max: number;
  /** Number of samples. */
  n: number;
}

/** Linear-interpolated quantile of sorted samples, `q` in [0, 1]. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** Median, quartiles and range of `samples`. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    median: quantile(sorted, 0.5),
    p25: quantile(sorted, 0.25),
    p75: quantile(sorted, 0.75),
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
    n: sorted.length,
  };
}

/** Milliseconds since an arbitrary origin, with sub-microsecond resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Runs `fn` `count` times and returns the median time of one call, in milliseconds. */
export async function medianTime(count: number, fn: () => unknown): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = nowMs();
    await fn();
    samples.push(nowMs() - start);
  }
  return summarize(samples).median;
}
