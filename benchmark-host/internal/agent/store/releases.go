package store

import "time"

// ReleaseMeta is what deploy records beside a release (releases/<sha>.json).
type ReleaseMeta struct {
	SHA    string `json:"sha"`
	Role   string `json:"role"`
	Digest string `json:"digest,omitempty"`
}

// WriteReleaseMeta records, beside a release just deployed, what it was deployed as.
func (s *Store) WriteReleaseMeta(m ReleaseMeta) error {
	return WriteJSONAtomic(s.ReleaseDir(m.SHA)+".json", struct {
		ReleaseMeta
		Deployed time.Time `json:"deployed"`
	}{m, time.Now().UTC()})
}

// BuildDigest is the SHA-256 of the artifact a release was deployed from, "" when unknown.
func (s *Store) BuildDigest(sha string) string {
	var m ReleaseMeta
	ReadJSON(s.ReleaseDir(sha)+".json", &m)
	return m.Digest
}
