package plan

import (
	"encoding/json"
	"os"
	"testing"
)

// The config checks templates as the host does (src/contract/rules.ts, templateError): both
// read these vectors, so a placeholder added here and not there fails one of the two.
func TestTemplateVectorsSharedWithTheConfig(t *testing.T) {
	var f struct {
		Vectors []struct {
			Template string `json:"template"`
			Error    string `json:"error"`
		} `json:"vectors"`
	}
	b, err := os.ReadFile("../../contract/testdata/templates.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, v := range f.Vectors {
		_, err := ParseTemplate(v.Template)
		switch {
		case v.Error == "" && err != nil:
			t.Errorf("ParseTemplate(%q): %v; want it accepted", v.Template, err)
		case v.Error != "" && (err == nil || err.Error() != v.Error):
			t.Errorf("ParseTemplate(%q): %v; want %s", v.Template, err, v.Error)
		}
	}
}
