package contract

// ErrorKind is why a run failed (Outcome.ErrorKind): a closed set, so that the action can
// tell the failures apart (docs/design/0019-run-failures-enumerated.md).
type ErrorKind string

// What failed a run.
const (
	ErrorPreflight    ErrorKind = "preflight"     // the host refused the run before any load (disk, memory, ports)
	ErrorPlan         ErrorKind = "plan"          // a build lacks what the plan names (its proto files)
	ErrorLoadgen      ErrorKind = "loadgen"       // the load generator failed
	ErrorOverran      ErrorKind = "overran"       // the run went past --max-run-seconds
	ErrorAborted      ErrorKind = "aborted"       // perf-host abort stopped it
	ErrorWriteFailed  ErrorKind = "write_failed"  // a write of the run's records failed (a full disk)
	ErrorExecutorDied ErrorKind = "executor_died" // the run's process died without an outcome
	ErrorInternal     ErrorKind = "internal"      // the host's own state was not as the run needs

	ErrorChampionUnhealthy     ErrorKind = "champion_unhealthy"
	ErrorChallengerUnhealthy   ErrorKind = "challenger_unhealthy"
	ErrorChampionCrashed       ErrorKind = "champion_crashed"
	ErrorChallengerCrashed     ErrorKind = "challenger_crashed"
	ErrorChampionOutOfMemory   ErrorKind = "champion_out_of_memory"
	ErrorChallengerOutOfMemory ErrorKind = "challenger_out_of_memory"
	ErrorChampionOutOfDisk     ErrorKind = "champion_out_of_disk"
	ErrorChallengerOutOfDisk   ErrorKind = "challenger_out_of_disk"
	ErrorChampionNotStopped    ErrorKind = "champion_not_stopped"
	ErrorChallengerNotStopped  ErrorKind = "challenger_not_stopped"
)

// ErrorKinds is every ErrorKind: the enum of outcome.schema.json's error_kind.
var ErrorKinds = enumOf(
	ErrorPreflight, ErrorPlan, ErrorLoadgen, ErrorOverran, ErrorAborted, ErrorWriteFailed, ErrorExecutorDied, ErrorInternal,
	ErrorChampionUnhealthy, ErrorChallengerUnhealthy, ErrorChampionCrashed, ErrorChallengerCrashed,
	ErrorChampionOutOfMemory, ErrorChallengerOutOfMemory, ErrorChampionOutOfDisk, ErrorChallengerOutOfDisk,
	ErrorChampionNotStopped, ErrorChallengerNotStopped,
)

// ArmFailure is a failure either arm can have; Of names it for one arm.
type ArmFailure struct{ champion, challenger ErrorKind }

// The failures of an arm.
var (
	ArmUnhealthy   = ArmFailure{ErrorChampionUnhealthy, ErrorChallengerUnhealthy}     // did not start, or does not own its ports
	ArmCrashed     = ArmFailure{ErrorChampionCrashed, ErrorChallengerCrashed}         // its service exited during the load
	ArmOutOfMemory = ArmFailure{ErrorChampionOutOfMemory, ErrorChallengerOutOfMemory} // the kernel killed its processes for memory
	ArmOutOfDisk   = ArmFailure{ErrorChampionOutOfDisk, ErrorChallengerOutOfDisk}     // it filled its own filesystem
	ArmNotStopped  = ArmFailure{ErrorChampionNotStopped, ErrorChallengerNotStopped}   // its processes could not all be stopped
)

// Of is the failure's kind for arm: Champion, or Challenger (a promotion's candidate runs
// in the challenger arm).
func (f ArmFailure) Of(arm string) ErrorKind {
	if arm == Champion {
		return f.champion
	}
	return f.challenger
}

func enumOf[T ~string](values ...T) Enum {
	e := make(Enum, len(values))
	for i, v := range values {
		e[i] = string(v)
	}
	return e
}
