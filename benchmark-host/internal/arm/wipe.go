package arm

import (
	"fmt"
	"os/exec"
	"time"
)

// Shell commands, run in the arm's home as its user, that remove what the arm wrote there: all
// of it, or all but its STATE_DIR.
const (
	clean         = `find . -mindepth 1 -maxdepth 1 ! -name lost+found -exec rm -rf -- {} +`
	cleanButState = `find . -mindepth 1 -maxdepth 1 ! -name lost+found ! -name state -exec rm -rf -- {} +`
)

// Wipe removes everything the stopped arm wrote in its home, its STATE_DIR included (an arm that
// filled its disk leaves nothing for the next run to trip on), as the arm's own user.
func (a *Arm) Wipe() error {
	if err := a.checkHome(); err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", clean)
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := a.runBounded(a.Launch, cmd, time.Minute); err != nil {
		return fmt.Errorf("%s: removing what it wrote in %s: %v %s", a.Name, a.Home, err, out.String())
	}
	return nil
}
