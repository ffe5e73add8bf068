// The one rule by which a test that asserts an A/A gate is not labelled allows for chance: the
// interval labels an A/A red or green about one gate in 20, red one in 40
// (test/analysis/simulation.test.ts), so when the first gate labels, the test measures an
// independent second one (a host of its own, or a build of its own). A test that asserts grey then
// fails by chance about once in 400, one that asserts "not red" once in 1,600, while a real
// difference between the arms stays labelled.

/** Measures an A/A gate (attempt 0), and once more (attempt 1) when the first `labelled`. */
export async function aaAllowingChance<T>(
  measure: (attempt: 0 | 1) => Promise<T>,
  labelled: (r: T) => boolean,
): Promise<T> {
  const first = await measure(0);
  return labelled(first) ? measure(1) : first;
}
