package contract

import (
	"fmt"
	"slices"
	"strings"
)

// The variables the host gives a service (docs/design/0013-symmetric-starts.md): in its
// environment, and expanded in its command and setup argv and its env values. The TypeScript side
// checks a config's references with the same rule; both are tested against
// testdata/service-args.json.
const (
	VarPort     = "PORT"
	VarStateDir = "STATE_DIR"
	// PortVarPrefix starts the variable of each of service.ports: peer → PORT_PEER.
	PortVarPrefix = "PORT_"
)

// PortVariable is the variable a named extra port is given as: peer → PORT_PEER.
func PortVariable(name string) string { return PortVarPrefix + strings.ToUpper(name) }

// HostSetsEnv reports whether the host sets the variable itself, so that service.env may not:
// PATH, HOME, the main port's variable (portEnv: service.port_env, "" for PORT),
// PORT_<anything>, STATE_DIR.
func HostSetsEnv(name, portEnv string) bool {
	if portEnv == "" {
		portEnv = VarPort
	}
	switch name {
	case "PATH", "HOME", portEnv, VarStateDir:
		return true
	}
	return strings.HasPrefix(name, PortVarPrefix)
}

// PortEnvError says what is wrong with a service.port_env: it must be a variable name the host
// does not set otherwise (PATH, HOME, STATE_DIR, PORT_<NAME>).
func PortEnvError(name string) error {
	if err := EnvName.Check(name); err != nil {
		return err
	}
	if name != VarPort && HostSetsEnv(name, VarPort) {
		return fmt.Errorf("%q is set by the host already (PATH, HOME, PORT_<NAME> and STATE_DIR are the host's); name the variable your service reads its port from, such as GRPC_PORT", name)
	}
	return nil
}

// ExpandArg expands one argument of a service's command or setup: $NAME and ${NAME} for each
// NAME in vars (PORT, STATE_DIR, the PORT_<NAME> of service.ports) and nothing else: any
// other $… is left as written, for a shell the argument may go to (whose environment holds the
// same values), and there is no escape. A $PORT_<NAME> that service.ports does not name is an
// error saying so, since PORT_ is the host's.
func ExpandArg(arg string, vars map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(arg); i++ {
		name, width := varAt(arg[i:])
		v, ok := vars[name]
		switch {
		case width == 0:
			b.WriteByte(arg[i])
			continue
		case !ok && strings.HasPrefix(name, PortVarPrefix):
			return "", fmt.Errorf("%q: $%s is not a port of service.ports or service.dependencies (%s expand here)", arg, name, knownVars(vars))
		case !ok:
			b.WriteString(arg[i : i+width])
		default:
			b.WriteString(v)
		}
		i += width - 1
	}
	return b.String(), nil
}

// varAt reads a $NAME or ${NAME} at the start of s: its name and length, or width 0.
func varAt(s string) (name string, width int) {
	if len(s) < 2 || s[0] != '$' {
		return "", 0
	}
	if s[1] == '{' {
		end := strings.IndexByte(s, '}')
		if end < 0 || !EnvName.MatchString(s[2:end]) {
			return "", 0
		}
		return s[2:end], end + 1
	}
	j := 1
	for j < len(s) && isNameByte(s[j]) && (j > 1 || isNameStart(s[j])) {
		j++
	}
	if j == 1 {
		return "", 0
	}
	return s[1:j], j
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func isNameByte(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }

// knownVars lists what expands, for error messages: "$PORT, $PORT_PEER, $STATE_DIR".
func knownVars(vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, "$"+k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// ServiceVariables are the variables a spec's argv and env values may name, with placeholder
// values: for checking references before the host has chosen the ports.
func ServiceVariables(ports []string) map[string]string {
	vars := map[string]string{VarPort: "0", VarStateDir: "/"}
	for _, p := range ports {
		vars[PortVariable(p)] = "0"
	}
	return vars
}

// ServicePortNames are the names of every extra port an arm needs for s: service.ports, then
// each dependency's name and its ports. The service and its dependencies all see them all.
func ServicePortNames(s ServiceSpec) []string {
	names := slices.Clone(s.Ports)
	for _, d := range s.Dependencies {
		names = append(names, d.Name)
		names = append(names, d.Ports...)
	}
	return names
}
