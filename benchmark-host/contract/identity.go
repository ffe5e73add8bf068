package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Identity is what a run measured: the builds (the digests of what was deployed), the service
// spec each arm ran with, where the load generator and the arms ran, and the generator's
// settings. Reruns of a build pool only with runs of the same identity: a changed config, a
// rebuilt artifact under the same commit or a host placed differently measures something else
// (docs/design/0003-run-identity.md).
type Identity struct {
	// The SHA-256 of the fields below: equal digests, one identity.
	Digest     string      `json:"digest"`
	Champion   ArmIdentity `json:"champion"`
	Challenger ArmIdentity `json:"challenger"`
	// Where the load generator and the arms ran: method, and each one's CPUs.
	Placement string `json:"placement"`
	// The SHA-256 of the generator's settings: its version and the plan, less what differs
	// between reruns of one comparison (its run id, number of pairs, seed, targets and builds).
	Generator string `json:"generator"`
	// The champion arm ran the champion's build with this run's service spec, which differs
	// from the one it was promoted with (an A/B or A/A run on the champion).
	ChampionSpecChanged bool `json:"champion_spec_changed,omitempty"`
}

// ArmIdentity is one arm's build and spec.
type ArmIdentity struct {
	SHA string `json:"sha" limit:"sha"`
	// The SHA-256 of the deployed artifact as received ("" for a release deployed before
	// digests were kept).
	Build string `json:"build"`
	// The SHA-256 of the service spec the arm ran with, its defaults filled.
	Service string `json:"service"`
}

// Digest is the hex SHA-256 of v's JSON encoding (struct fields in order, map keys sorted:
// the same value always gives the same digest).
func Digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // contract types always encode
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Seal sets the identity's digest from its other fields.
func (id *Identity) Seal() {
	id.Digest = ""
	id.Digest = Digest(id)
}

// GeneratorSettings is the part of a plan, with the generator's version, that must agree for
// two runs of one comparison to pool.
func GeneratorSettings(generator string, p Plan) string {
	p.RunID, p.Pairs, p.Seed, p.Targets, p.Builds = "", 0, nil, nil, nil
	return Digest(struct {
		Generator string `json:"generator"`
		Plan      Plan   `json:"plan"`
	}{generator, p})
}
