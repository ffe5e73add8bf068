// The statistics against values computed independently by scipy/statsmodels (reference.py).
import { describe, expect, it } from "vitest";
import { normalCdf, studentTCdf, studentTQuantile } from "../../src/analysis/distributions";
import { binomialUpperTail, holmAdjust, pairedT, signTest, wilcoxonSignedRank } from "../../src/analysis/tests";
import ref from "./reference-values.json";

const close = (got: number, want: number, rel = 1e-9, abs = 1e-12) =>
  expect(Math.abs(got - want), `got ${got}, want ${want}`).toBeLessThanOrEqual(Math.max(abs, rel * Math.abs(want)));

describe("against scipy reference values", () => {
  for (const [name, r] of Object.entries(ref.datasets)) {
    it(`dataset ${name}`, () => {
      const t95 = pairedT(r.d, 0.95);
      close(t95.mean, r.mean);
      close(t95.t, r.t, 1e-9);
      close(t95.p, r.t_p, 1e-7, 1e-14);
      close(t95.ci.lo, r.ci95[0]!, 1e-9);
      close(t95.ci.hi, r.ci95[1]!, 1e-9);
      const t90 = pairedT(r.d, 0.9);
      close(t90.ci.lo, r.ci90[0]!, 1e-9);
      close(t90.ci.hi, r.ci90[1]!, 1e-9);
      close(signTest(r.d).p, r.sign_p, 1e-12);
      const w = wilcoxonSignedRank(r.d);
      expect(w.method).toBe(r.wilcoxon_method === "exact" ? "exact" : "normal");
      close(w.statistic, r.wilcoxon_statistic);
      close(w.p, r.wilcoxon_p, 1e-9, 1e-14);
    });
  }

  it("Student t quantiles", () => {
    for (const { p, df, q } of ref.t_quantiles) close(studentTQuantile(p, df), q, 1e-10);
  });

  it("Student t CDF", () => {
    for (const { t, df, cdf } of ref.t_cdf) close(studentTCdf(t, df), cdf, 1e-10, 1e-15);
  });

  it("normal CDF", () => {
    for (const { z, cdf } of ref.normal_cdf) close(normalCdf(z), cdf, 1e-12, 1e-16);
  });

  it("Holm adjustment", () => {
    for (const { p, adjusted } of ref.holm) {
      holmAdjust(p).forEach((v, i) => {
        close(v, adjusted[i]!, 1e-12);
      });
    }
  });

  it("binomial upper tail", () => {
    for (const { k, n, p, tail } of ref.binomial_upper_tail) close(binomialUpperTail(k, n, p), tail, 1e-10);
  });
});
