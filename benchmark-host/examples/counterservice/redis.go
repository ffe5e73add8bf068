package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// redisPool is a few connections to one Redis, speaking RESP: enough for INCR and PING.
type redisPool struct {
	addr  string
	conns chan *redisConn
}

type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

func newRedisPool(addr string, size int) *redisPool {
	p := &redisPool{addr: addr, conns: make(chan *redisConn, size)}
	for range size {
		p.conns <- nil // dialled on first use
	}
	return p
}

// do sends one command and reads its reply: an integer or a simple string.
func (p *redisPool) do(args ...string) (string, error) {
	rc := <-p.conns
	if rc == nil {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			p.conns <- nil
			return "", err
		}
		rc = &redisConn{c: c, r: bufio.NewReader(c)}
	}
	reply, err := rc.roundTrip(args)
	if err != nil {
		rc.c.Close()
		rc = nil
	}
	p.conns <- rc
	return reply, err
}

func (rc *redisConn) roundTrip(args []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	rc.c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := rc.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case line == "":
		return "", errors.New("redis: empty reply")
	case line[0] == '-':
		return "", errors.New("redis: " + line[1:])
	case line[0] == ':' || line[0] == '+':
		return line[1:], nil
	}
	return "", fmt.Errorf("redis: unexpected reply %q", line)
}

// incr adds one to key and returns the new count.
func (p *redisPool) incr(key string) (int64, error) {
	reply, err := p.do("INCR", key)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(reply, 10, 64)
}
