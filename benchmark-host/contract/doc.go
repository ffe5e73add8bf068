// Package contract holds the documents that cross between perf-gate's two halves (the action
// and CLI in TypeScript, the benchmark host in Go) and the limits on them, declared once.
//
// Only wire types, their limits and the few rules both halves compute (the workload@rate key,
// the sample budget) live here. Validation lives next to the behaviour it guards (internal/plan
// compiles plans, internal/service starts services, internal/agent keeps floors) and reads its
// limits from here. `go generate` writes one JSON Schema per message into schema/; the
// TypeScript zod schemas in src/contract are tested against those files, so a field added on
// one side only fails `npm test`, naming it.
package contract

//go:generate go run ./internal/schemagen -out schema
