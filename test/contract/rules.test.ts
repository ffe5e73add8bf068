// The rules written once per language, checked against the vectors the Go tests read too
// (benchmark-host/contract/rules_test.go).
import { describe, expect, it } from "vitest";
import floorKeys from "../../benchmark-host/contract/testdata/floor-keys.json";
import keys from "../../benchmark-host/contract/testdata/keys.json";
import budgets from "../../benchmark-host/contract/testdata/sample-budget.json";
import serviceArgs from "../../benchmark-host/contract/testdata/service-args.json";
import templates from "../../benchmark-host/contract/testdata/templates.json";
import {
  comparisonKey,
  floorKey,
  hostSetsEnv,
  sampleBudget,
  serviceArgError,
  templateError,
} from "../../src/contract/rules";

describe("rules shared with Go", () => {
  it("writes workload@rate keys as contract.Key does: the shortest decimal, never an exponent", () => {
    for (const v of keys.vectors) expect(comparisonKey(v.workload, v.rate), JSON.stringify(v)).toBe(v.key);
  });

  it("writes workload@rate/pNN floor keys as contract.FloorKey does", () => {
    for (const v of floorKeys.vectors)
      expect(floorKey(v.workload, v.rate, v.percentile), JSON.stringify(v)).toBe(v.key);
  });

  it("computes the sample budget as contract.SampleBudget does", () => {
    for (const v of budgets.vectors) expect(sampleBudget(v.percentile), JSON.stringify(v)).toBe(v.budget);
  });

  it("finds the service arguments contract.ExpandArg refuses, with its message, and the variables the host sets", () => {
    const vars = Object.keys(serviceArgs.vars);
    for (const v of serviceArgs.vectors)
      expect(serviceArgError(v.arg, vars), v.arg).toBe("error" in v ? v.error : undefined);
    for (const v of serviceArgs.env)
      expect(
        hostSetsEnv(v.name, "port_env" in v ? v.port_env : undefined),
        `${v.name} ${"port_env" in v ? v.port_env : ""}`,
      ).toBe(v.host_sets);
  });

  it("finds the request templates plan.ParseTemplate refuses, with its message", () => {
    for (const v of templates.vectors as { template: string; error?: string }[])
      expect(templateError(v.template), v.template).toBe(v.error);
  });
});
