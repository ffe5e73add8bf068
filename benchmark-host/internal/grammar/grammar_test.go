package grammar

import (
	"strings"
	"testing"
)

func TestAccepts(t *testing.T) {
	cases := map[string]Command{
		"deploy challenger abc1234":                  {Verb: "deploy", Role: "challenger", SHA: "abc1234"},
		"deploy champion " + strings.Repeat("f", 40): {Verb: "deploy", Role: "champion", SHA: strings.Repeat("f", 40)},
		"run pr-42-abc1234-1":                        {Verb: "run", RunID: "pr-42-abc1234-1"},
		"aa calibrate-1":                             {Verb: "aa", RunID: "calibrate-1"},
		"wait pr-1-aaaaaaa-2":                        {Verb: "wait", RunID: "pr-1-aaaaaaa-2"},
		"promote 0123456789abcdef":                   {Verb: "promote", SHA: "0123456789abcdef"},
		"rollback":                                   {Verb: "rollback"},
		"status":                                     {Verb: "status"},
		"gc":                                         {Verb: "gc"},
		"floor-record calibrate-1":                   {Verb: "floor-record", RunID: "calibrate-1"},
		"floors":                                     {Verb: "floors"},
		"profile pr-42-abc1234-1 challenger":         {Verb: "profile", RunID: "pr-42-abc1234-1", Role: "challenger"},
		"profile calibrate-1 champion":               {Verb: "profile", RunID: "calibrate-1", Role: "champion"},
		"runs 0123456789abcdef0123456789abcdef01234567": {Verb: "runs", SHA: "0123456789abcdef0123456789abcdef01234567"},
		"promote abc1234 42":                            {Verb: "promote", SHA: "abc1234", PullRequest: 42},
		"promote abc1234 999999999":                     {Verb: "promote", SHA: "abc1234", PullRequest: 999999999},
		"gate-record pr42-abc1234-1-0":                  {Verb: "gate-record", RunID: "pr42-abc1234-1-0"},
		"drift-record drift-1-0":                        {Verb: "drift-record", RunID: "drift-1-0"},
		"history":                                       {Verb: "history"},
	}
	for raw, want := range cases {
		got, err := Parse(raw)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
}

func TestRefuses(t *testing.T) {
	cases := map[string]string{
		"":                        "no command",
		"status; rm -rf /":        "not allowed",
		"status && id":            "not allowed",
		"status | nc evil 1":      "not allowed",
		"status $(id)":            "not allowed",
		"status `id`":             "not allowed",
		"run ../../etc":           "'..'",
		"deploy challenger ..":    "'..'",
		"result a..b":             "'..'",
		"shutdown now":            "unknown verb",
		"bash":                    "unknown verb",
		"stop":                    "unknown verb", // local only: a CI key never stops the champion
		"isolation":               "unknown verb", // local only: a CI key never holds the host with it
		"STATUS":                  "not allowed",
		"status  ":                "single spaces",
		"status\n":                "not allowed",
		"status\x00":              "not allowed",
		"deploy challenger abc12": "7 to 40",
		"deploy challenger " + strings.Repeat("a", 41): "7 to 40",
		"deploy challenger ABC1234":                    "not allowed",
		"deploy staging abc1234":                       "role",
		"deploy challenger":                            "takes 2",
		"run x":                                        "run-id",
		"run -rf":                                      "run-id",
		"run " + strings.Repeat("a", 65):               "run-id",
		"status extra":                                 "takes 0",
		"wait " + strings.Repeat("a", 300):             "longer than",
		"run pr/1":                                     "not allowed",
		"promote abc1234 --force":                      "pull request must be its number",
		"promote abc1234 42 43":                        "takes 1 to 2 arguments, got 3",
		"promote abc1234 0":                            "pull request must be its number",
		"promote abc1234 042":                          "pull request must be its number",
		"promote abc1234 1000000000":                   "pull request must be its number",
		"promote abc1234 -1":                           "pull request must be its number",
		"promote 42":                                   "7 to 40",
		"promote":                                      "takes 1 to 2 arguments, got 0",
		"history all":                                  "takes 0",
		"history --since 30d":                          "takes 0",
		"gate-record":                                  "takes 1",
		"gate-record ../../history.jsonl":              "'..'",
		"gate-record pr1 x":                            "takes 1",
		"drift-record " + strings.Repeat("a", 65):      "run-id",
		// The profile verb names a run and an arm, never a file.
		"profile pr-1-abc1234-1":                  "takes 2",
		"profile pr-1-abc1234-1 challenger.pb.gz": "not allowed",
		"profile pr-1-abc1234-1 ../champion":      "'..'",
		"profile pr-1-abc1234-1 /etc/shadow":      "not allowed",
		"profile pr-1-abc1234-1 loadgen":          "role",
		"profile pr-1-abc1234-1 challenger extra": "takes 2",
		"profile champion pr-1-abc1234-1":         "role",
		"profile x challenger":                    "run-id",
	}
	for raw, want := range cases {
		if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error %v, want one containing %q", raw, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("deploy challenger abc1234")
	f.Add("run pr-1-abc1234-1; id")
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := Parse(raw)
		if err != nil {
			return
		}
		// Whatever is accepted names a known verb and carries no path or shell syntax.
		if _, ok := verbs[c.Verb]; !ok || strings.ContainsAny(raw, "/.;&|$`\\\n") {
			t.Fatalf("accepted %q as %+v", raw, c)
		}
	})
}
