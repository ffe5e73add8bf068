package supervisor

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

// eventLog is champion-events.jsonl.
type eventLog struct{ path string }

// add appends an event; a failure to record it is not the champion's failure.
func (l eventLog) add(event, sha, detail string) {
	if fi, err := os.Stat(l.path); err == nil && fi.Size() > maxEventsBytes {
		if evs := l.all(); len(evs) > 0 {
			l.rewrite(evs[len(evs)/2:])
		}
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(championEvent{Time: time.Now().UTC(), Event: event, SHA: sha, Detail: detail})
	f.Write(append(line, '\n'))
}

func (l eventLog) rewrite(evs []championEvent) {
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	enc := json.NewEncoder(f)
	for _, e := range evs {
		enc.Encode(e)
	}
	if f.Close() == nil {
		os.Rename(tmp, l.path)
	}
}

// all returns every recorded event, oldest first.
func (l eventLog) all() []championEvent {
	f, err := os.Open(l.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []championEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e championEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}
