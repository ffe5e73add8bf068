// The rules written once per language, checked against the vectors the Go tests read too
// (benchmark-host/contract/rules_test.go).
import { describe, expect, it } from "vitest";
import floorKeys from "../../benchmark-host/contract/testdata/floor-keys.json";
import keys from "../../benchmark-host/contract/testdata/keys.json";
import budgets from "../../benchmark-host/contract/testdata/sample-budget.json";
import { comparisonKey, floorKey, sampleBudget } from "../../src/contract/rules";

describe("rules shared with Go", () => {
  it("writes workload@rate keys as contract.Key does: the shortest decimal, never an exponent", () => {
    for (const v of keys.vectors) expect(comparisonKey(v.workload, v.rate), JSON.stringify(v)).toBe(v.key);
  });

  it("writes workload@rate/pNN floor keys as contract.FloorKey does", () => {
    for (const v of floorKeys.vectors) expect(floorKey(v.workload, v.rate, v.percentile), JSON.stringify(v)).toBe(v.key);
  });

  it("computes the sample budget as contract.SampleBudget does", () => {
    for (const v of budgets.vectors) expect(sampleBudget(v.percentile), JSON.stringify(v)).toBe(v.budget);
  });
});
