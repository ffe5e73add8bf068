package contract

// Message is one document of the contract, for the schema generator.
type Message struct {
	// Name is the schema's file name: schema/NAME.schema.json.
	Name  string
	Title string
	Value any
}

// Messages lists every document that crosses between the halves.
var Messages = []Message{
	{"plan", "the load generator's plan", Plan{}},
	{"run-request", "what perf-host run and aa read on stdin", RunRequest{}},
	{"service", "how the host starts and checks a build", ServiceSpec{}},
	{"result", "the load generator's result", Result{}},
	{"host-result", "what perf-host result prints", HostResult{}},
	{"outcome", "how a run ended: the last line of perf-host wait", Outcome{}},
	{"floor-record", "what perf-host floor-record reads on stdin", FloorRecord{}},
	{"floor", "a recorded A/A floor: perf-host floors and status", Floor{}},
	{"run-summary", "a finished run: perf-host runs", RunSummary{}},
	{"status", "what perf-host status prints", Status{}},
	{"gate-record", "what perf-host gate-record reads on stdin", GateRecord{}},
	{"drift-record", "what perf-host drift-record reads on stdin", DriftRecord{}},
	{"history", "what perf-host history prints", History{}},
}

// Constants are the values besides the messages that both halves use, written to
// schema/constants.json.
var Constants = map[string]any{
	"schema_version":         SchemaVersion,
	"history_schema_version": HistorySchemaVersion,
	"outcome_marker":         OutcomeMarker,
	"exit_codes": map[string]int{
		"ok": ExitOK, "failed": ExitFailed, "refused": ExitRefused, "not_finished": ExitNotFinished, "busy": ExitBusy,
	},
	"run_id_pattern": RunID.Expr,
	"max_classes":    MaxClasses,
}
