package agent

import (
	"bufio"
	"encoding/json"
	"os"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// maxEventsBytes bounds champion-events.jsonl: past it, the older half is dropped.
const maxEventsBytes = 1 << 20

// championEvent appends an event; a failure to record it is not the champion's failure.
func (h *Host) championEvent(event, sha, detail string) {
	path := h.path("champion-events.jsonl")
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxEventsBytes {
		if evs := h.ChampionEvents(time.Time{}); len(evs) > 0 {
			h.rewriteEvents(evs[len(evs)/2:])
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(contract.ChampionEvent{Time: time.Now().UTC(), Event: event, SHA: sha, Detail: detail})
	f.Write(append(line, '\n'))
}

func (h *Host) rewriteEvents(evs []contract.ChampionEvent) {
	tmp := h.path("champion-events.jsonl.tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	enc := json.NewEncoder(f)
	for _, e := range evs {
		enc.Encode(e)
	}
	if f.Close() == nil {
		os.Rename(tmp, h.path("champion-events.jsonl"))
	}
}

// ChampionEvents returns the events since a time, oldest first.
func (h *Host) ChampionEvents(since time.Time) []contract.ChampionEvent {
	f, err := os.Open(h.path("champion-events.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []contract.ChampionEvent
	s := bufio.NewScanner(f)
	for s.Scan() {
		var e contract.ChampionEvent
		if json.Unmarshal(s.Bytes(), &e) == nil && !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out
}
