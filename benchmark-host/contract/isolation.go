package contract

// Isolation is how the host keeps the arms apart and where it places them: in `status` and in
// every host result.
type Isolation struct {
	Cgroup CgroupSetup `json:"cgroup"`
	// champion and challenger.
	Arms      map[string]ArmIsolation `json:"arms"`
	Placement Placement               `json:"placement"`
	MaxProcs  MaxProcs                `json:"max_procs"`
	// What keeps each arm off the other's ports and the host's services, its disk and its
	// memory, in one line each ("nftables table inet perf_gate: …", "none: …").
	Network string `json:"network,omitempty"`
	Disk    string `json:"disk,omitempty"`
	Memory  string `json:"memory,omitempty"`
	// What keeps each arm's programs off the host's /tmp, /var/tmp, /run/lock, /dev/shm and IPC,
	// and the other arm's, and whether their abstract unix sockets are scoped, in one line
	// ("arm-exec: …", "none: …").
	PrivateMounts string `json:"private_mounts,omitempty"`
	// perf-host's capabilities: permitted, raised one operation at a time.
	Capabilities []string `json:"capabilities"`
	// What is weaker than it should be on this host, and what to do about it.
	Notes []string `json:"notes"`
}

// Cgroup modes.
const (
	CgroupControllers = "v2"      // cgroup v2 with at least one of cpu, cpuset, memory, pids
	CgroupCore        = "v2-core" // cgroup v2 without them: membership, cgroup.kill and cpu.stat
	CgroupNone        = "none"    // no usable subtree: the arms are contained by their users
)

// CgroupSetup is the cgroup subtree as perf-host found it.
type CgroupSetup struct {
	Mode string `json:"mode" limit:"cgroup_mode"`
	// The subtree delegated to perf-host (--cgroup).
	Path string `json:"path,omitempty"`
	// Controllers enabled for the arms' groups.
	Controllers []string `json:"controllers"`
	// What works, what falls back, and why, in one line.
	Note string `json:"note"`
}

// ArmIsolation is one arm's containment.
type ArmIsolation struct {
	User string `json:"user"`
	UID  uint32 `json:"uid"`
	// No other arm, and not perf-host, runs as the user: all its processes are the arm's.
	DedicatedUser bool   `json:"dedicated_user"`
	Cgroup        string `json:"cgroup,omitempty"`
	Port          int    `json:"port"`
	// The arm's directory; its build runs in work/ below it.
	Home string `json:"home"`
}

// Placement is where the load generator and the arms run.
type Placement struct {
	// cpuset, sched_setaffinity or none.
	Method      string `json:"method" limit:"placement_method"`
	LoadgenCPUs string `json:"loadgen_cpus"`
	ArmCPUs     string `json:"arm_cpus"`
}

// MaxProcs is the bound on an arm's tasks and what enforces it.
type MaxProcs struct {
	Limit int `json:"limit" limit:"count"`
	// pids.max, RLIMIT_NPROC or none.
	By string `json:"by" limit:"max_procs_by"`
}

// ResourceAccounting says where a host result's per-slice service_* fields come from, per arm.
type ResourceAccounting struct {
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
}
