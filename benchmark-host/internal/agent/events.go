package agent

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// championEvent is one line of champion-events.jsonl: what the supervisor did with the
// champion (started, serving, exited, stopped, yielded to a run, resumed after one), for the
// operator reading the host's history.
type championEvent struct {
	Time   time.Time `json:"time"`
	Event  string    `json:"event"`
	SHA    string    `json:"sha"`
	Detail string    `json:"detail,omitempty"`
}

// maxEventsBytes bounds champion-events.jsonl: past it, the older half is dropped.
const maxEventsBytes = 1 << 20

// championEvent appends an event; a failure to record it is not the champion's failure.
func (h *Host) championEvent(event, sha, detail string) {
	path := h.path("champion-events.jsonl")
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxEventsBytes {
		if evs := h.championEvents(); len(evs) > 0 {
			h.rewriteEvents(evs[len(evs)/2:])
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(championEvent{Time: time.Now().UTC(), Event: event, SHA: sha, Detail: detail})
	f.Write(append(line, '\n'))
}

func (h *Host) rewriteEvents(evs []championEvent) {
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

// championEvents returns every recorded event, oldest first.
func (h *Host) championEvents() []championEvent {
	f, err := os.Open(h.path("champion-events.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []championEvent
	s := bufio.NewScanner(f)
	for s.Scan() {
		var e championEvent
		if json.Unmarshal(s.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}
