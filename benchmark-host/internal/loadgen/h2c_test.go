package loadgen

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// h2cServer is Go's own HTTP/2 server without TLS (prior knowledge only: an HTTP/1.1 request
// is refused), with a known added delay, recording what arrived.
type h2cServer struct {
	url   string
	mu    sync.Mutex
	proto map[string]int // request protocols seen
	conns map[string]bool
	hosts map[string]int
	paths map[string]int
	slept []float64 // µs
}

// reset forgets what earlier runs sent: a test measures again when the generator fell behind.
func (s *h2cServer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proto, s.conns, s.hosts, s.paths, s.slept = map[string]int{}, map[string]bool{}, map[string]int{}, map[string]int{}, nil
}

func startH2C(t *testing.T, delay time.Duration) *h2cServer {
	t.Helper()
	s := &h2cServer{}
	s.reset()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var slept time.Duration
		if delay > 0 {
			start := time.Now()
			time.Sleep(delay)
			slept = time.Since(start)
		}
		s.mu.Lock()
		s.proto[r.Proto]++
		s.conns[r.RemoteAddr] = true
		s.hosts[r.Host]++
		s.paths[strings.SplitN(r.URL.Path, "-", 2)[0]]++
		if delay > 0 {
			s.slept = append(s.slept, float64(slept.Microseconds()))
		}
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String()
	return s
}

// protocol h2c: the plan's requests go over HTTP/2 without TLS to a server that speaks
// nothing else, on `connections` HTTP/2 connections per target; the challenger's added delay
// is seen at p50 within 0.5 ms, every slice holds its rate within 1%, and the statuses are
// counted as the seeded mix chose them.
func TestH2CMeasuresTheDelayRateAndStatuses(t *testing.T) {
	const delay = 2 * time.Millisecond
	champion, challenger := startH2C(t, 0), startH2C(t, delay)
	p := mustPlan(t, planJSON(champion.url, challenger.url,
		`"protocol":"h2c","rate":1000,"slice_seconds":1.25,"pairs":3,"seed":7,"warmup_seconds":0.5,"connections":2,
		 "requests":[{"path":"/ok-{{seq}}","weight":9},{"path":"/missing","weight":1,"headers":{"Host":"api.example"}}]`))
	// A run measured again must be judged on its own requests and connections alone.
	res := healthyRun(t, p, func() { champion.reset(); challenger.reset() })
	if len(res.Slices) != 6 || res.Partial {
		t.Fatalf("want 6 complete slices, got %d (partial=%v)", len(res.Slices), res.Partial)
	}
	for _, s := range []*h2cServer{champion, challenger} {
		s.mu.Lock()
		if len(s.proto) != 1 || s.proto["HTTP/2.0"] == 0 {
			t.Errorf("%s: requests arrived as %v, want HTTP/2.0 only", s.url, s.proto)
		}
		if len(s.conns) != 2 {
			t.Errorf("%s: %d connections, want the plan's 2", s.url, len(s.conns))
		}
		if s.hosts["api.example"] != s.paths["/missing"] || s.hosts[strings.TrimPrefix(s.url, "http://")] != s.paths["/ok"] {
			t.Errorf("%s: Host headers %v for paths %v: the plan's Host header on /missing, the target's elsewhere", s.url, s.hosts, s.paths)
		}
		s.mu.Unlock()
	}
	var p50s []float64
	for i := 0; i < len(res.Slices); i += 2 {
		p50s = append(p50s, float64(res.Slices[i+1].LatencyUs.P50-res.Slices[i].LatencyUs.P50))
	}
	challenger.mu.Lock()
	slept50 := quantile(challenger.slept, 0.5)
	challenger.mu.Unlock()
	d50 := quantile(p50s, 0.5)
	t.Logf("median p50 difference %.0f µs (per pair %v); the server's sleeps lasted p50 %.0f µs", d50, p50s, slept50)
	if abs(d50-slept50) > 500 {
		t.Errorf("median p50 difference %.0f µs, want the server's sleep p50 %.0f µs ± 500 µs", d50, slept50)
	}
	for _, s := range res.Slices {
		want := expectedMix(p, s.Index, 1250)
		if !s.Valid {
			t.Errorf("slice %d invalid: %s", s.Index, s.InvalidReason)
		}
		if rel := abs(s.AchievedRPS-p.Rate) / p.Rate; rel > 0.01 {
			t.Errorf("slice %d achieved %.1f req/s, plan %.0f (%.2f%% off)", s.Index, s.AchievedRPS, p.Rate, rel*100)
		}
		if s.Completed != 1250 || s.OK != want[0] || s.Errors.Status4 != want[1] || s.Errors.Total() != want[1] || s.NewConnections != 0 {
			t.Errorf("slice %d: completed %d ok %d errors %+v new connections %d, want 1250, ok %d, 4xx %d, none new",
				s.Index, s.Completed, s.OK, s.Errors, s.NewConnections, want[0], want[1])
		}
	}
}

// A target that speaks only HTTP/1.1 cannot answer an h2c plan's prior-knowledge preface:
// the plan fails before any load, naming the target.
func TestH2CAgainstAnHTTP1OnlyServer(t *testing.T) {
	web := newServer(t, 0, nil)
	_, err := Run(context.Background(), mustPlan(t, planJSON(web.URL, web.URL, `"protocol":"h2c","rate":200,"slice_seconds":0.5,"pairs":1,"requests":[{"path":"/a"}]`)), nil)
	if err == nil || !strings.Contains(err.Error(), "targets.champion") {
		t.Errorf("want the run refused naming targets.champion, got %v", err)
	}
}
