// What a result's fields say together. The schema checks each field's type and range; a result
// can still pass it and describe no run that happened: a slice the run's order does not name, a
// pair past the plan, more requests answered than sent. The load generator writes slice i of
// the order as pair i/2 (benchmark-host/internal/loadgen/schedule.go), and counts each finished
// request once, as ok or as one error (slice.go), so any of these is a broken or edited result,
// and no verdict is read from it.
import type { ClassSlice, LoadgenResult, Slice } from "./result";

/** The first thing a result says that no run could have measured, naming its field; undefined when none. */
export function resultInconsistency(r: LoadgenResult): string | undefined {
  if (r.order.length !== 2 * r.plan.pairs)
    return `order: ${r.order.length} slices, but the plan's ${r.plan.pairs} pairs make ${2 * r.plan.pairs}`;
  for (let k = 0; k + 1 < r.order.length; k += 2)
    if (r.order[k] === r.order[k + 1]) return `order: pair ${k / 2} measures the ${r.order[k]} twice`;
  if (r.slices.length > r.order.length)
    return `slices: ${r.slices.length}, more than the ${r.order.length} of the run's order`;
  // Not ordered: a result written before its end was taken from the monotonic clock may carry a
  // wall clock that stepped back during the run. Its slices' times always were monotonic.
  for (const [field, time] of [
    ["started", r.started],
    ["ended", r.ended],
  ] as const)
    if (Number.isNaN(Date.parse(time))) return `${field}: ${JSON.stringify(time)} is not a time`;
  for (const [i, s] of r.slices.entries()) {
    const problem = sliceInconsistency(s, i, r);
    if (problem) return `slices[${i}].${problem}`;
  }
  return undefined;
}

function sliceInconsistency(s: Slice, i: number, r: LoadgenResult): string | undefined {
  if (s.index !== i) return `index: ${s.index}, but it is slice ${i} of the result`;
  if (s.pair !== Math.floor(i / 2)) return `pair: ${s.pair}, but slice ${i} belongs to pair ${Math.floor(i / 2)}`;
  if (s.arm !== r.order[i]) return `arm: ${s.arm}, but the run's order measures the ${r.order[i]} in slice ${i}`;
  const [start, end] = [Date.parse(s.start), Date.parse(s.end)];
  if (Number.isNaN(start) || Number.isNaN(end) || end < start)
    return `start, end: ${JSON.stringify(s.start)} to ${JSON.stringify(s.end)} is not a span of time`;
  if (s.completed > s.sent) return `completed: ${s.completed} requests, more than the ${s.sent} sent`;
  if (s.sent + s.overflow > s.scheduled)
    return `sent: ${s.sent} requests and ${s.overflow} overflowed, more than the ${s.scheduled} scheduled`;
  const counts = countInconsistency(s);
  if (counts) return counts;
  if (s.classes) {
    if (s.classes.length !== r.plan.requests.length)
      return `classes: ${s.classes.length}, but the plan has ${r.plan.requests.length} requests`;
    for (const [c, cls] of s.classes.entries()) {
      const problem = countInconsistency(cls);
      if (problem) return `classes[${c}].${problem}`;
    }
    for (const field of ["completed", "ok", "recorded"] as const) {
      const sum = s.classes.reduce((n, c) => n + c[field], 0);
      if (sum !== s[field]) return `classes: their ${field} add up to ${sum}, the slice's is ${s[field]}`;
    }
  }
  return undefined;
}

/** A slice's or a class's answers: each finished request is ok or one error, and only a finished one is recorded. */
function countInconsistency(c: Slice | ClassSlice): string | undefined {
  const e = c.errors;
  const errors =
    e.connect + e.timeout + e["4xx"] + e["5xx"] + e.other + Object.values(e.grpc ?? {}).reduce((n, x) => n + x, 0);
  if (c.ok + errors !== c.completed)
    return `completed: ${c.completed} requests, but ${c.ok} ok and ${errors} errors add up to ${c.ok + errors}`;
  if (c.recorded > c.completed) return `recorded: ${c.recorded} requests, more than the ${c.completed} completed`;
  return undefined;
}
