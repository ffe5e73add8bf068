// The per-slice statistic at a percentile the result does not name: read from the slice's own
// HDR histogram (as the load generator wrote it), once per slice however often it is asked.
import { build, encodeIntoCompressedBase64 } from "hdr-histogram-js";
import { describe, expect, it } from "vitest";
import { slicePercentileUs } from "../../src/analysis/statistic";
import { makeSlice } from "./fixtures";

/** A slice whose histogram holds `n` requests at 1, 2, … n µs × scale. */
function sliceWith(n: number, scale: number) {
  const h = build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  for (let v = 1; v <= n; v++) h.recordValue(v * scale);
  const s = makeSlice(0, 0, "champion", 1000, { pairs: [] });
  s.histogram = encodeIntoCompressedBase64(h);
  return s;
}

describe("slicePercentileUs", () => {
  it("reads an unnamed percentile from the slice's histogram, to HDR's 3 significant digits", () => {
    const s = sliceWith(10_000, 1);
    expect(Math.abs(slicePercentileUs(s, 95) - 9_500)).toBeLessThanOrEqual(10);
    expect(Math.abs(slicePercentileUs(s, 75) - 7_500)).toBeLessThanOrEqual(8);
    expect(slicePercentileUs(s, 99)).toBe(1000); // a named one is the result's field
  });

  it("answers each slice from its own histogram when asked again", () => {
    const [a, b] = [sliceWith(1000, 1), sliceWith(1000, 3)];
    const first = [slicePercentileUs(a, 95), slicePercentileUs(b, 95)];
    expect(first[1]).toBeGreaterThan(2.9 * first[0]!);
    expect([slicePercentileUs(a, 95), slicePercentileUs(b, 95)]).toEqual(first);
  });
});
