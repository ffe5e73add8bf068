// Package version names the release a binary was built from. The release build stamps it
// (release.sh: -ldflags -X …/internal/version.stamp=v1.2.3); a build from a checkout reports
// the commit Go recorded, so a host can always say what it runs.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// stamp is set at link time by the release build; empty otherwise.
var stamp string

// String is the release tag, else "devel" with the commit (and "+dirty") of a checkout build.
func String() string {
	if stamp != "" {
		return stamp
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if dirty {
		return "devel " + rev[:min(12, len(rev))] + "+dirty"
	}
	return "devel " + rev[:min(12, len(rev))]
}

// Line is what `--version` prints: the command, the release, and the Go toolchain and
// platform it was built for.
func Line(command string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", command, String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
