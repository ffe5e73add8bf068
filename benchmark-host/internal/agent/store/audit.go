package store

import (
	"encoding/json"
	"os"
	"time"
)

// Audit appends who asked what, and when, to audit.log.
func (s *Store) Audit(client, command, outcome string) {
	f, err := os.OpenFile(s.Path("audit.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]string{
		"time": time.Now().UTC().Format(time.RFC3339Nano), "client": client, "command": command, "outcome": outcome,
	})
	f.Write(append(line, '\n'))
}
