// Command genderize-usage shows how much of their quota the genderize
// plugin's callers have used, from the quota store the plugin counts in,
// and resets a caller's counts for a support case.
//
//	genderize-usage [-kong-yml kong.yml] [-consumer ID | -ip IP] [-json]
//	genderize-usage reset -consumer ID|-ip IP -yes [-kong-yml kong.yml]
//
// The store and the limits come from the genderize plugin's config in the
// declarative kong.yml (quota_policy, quota_path, plans, ip_limit) and its
// consumers (id, username, plan:NAME tag); -quota-path overrides the local
// file. Counters are kept per consumer id: declare consumers with an id in
// kong.yml (or give -consumer the id from the Admin API) to see names and
// plan limits. Listing never writes: the local file is opened read-only.
// Flags take one dash or two.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"text/tabwriter"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
)

const usage = `usage:
  genderize-usage [-kong-yml FILE] [-quota-path FILE] [-consumer ID | -ip IP] [-json]
  genderize-usage reset (-consumer ID | -ip IP) -yes [-kong-yml FILE] [-quota-path FILE]
`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "genderize-usage:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("bad usage")

// options are the command line.
type options struct {
	kongYML, quotaPath string
	consumer, ip       string
	json, yes          bool
}

func parse(name string, args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kongYML, "kong-yml", "/etc/kong/kong.yml", "declarative config with the genderize plugin and the consumers")
	fs.StringVar(&o.quotaPath, "quota-path", "", "the local quota file (default: the plugin's quota_path)")
	fs.StringVar(&o.consumer, "consumer", "", "only this consumer: its id, or a username kong.yml gives an id")
	fs.StringVar(&o.ip, "ip", "", "only this key-less client IP")
	if name == "reset" {
		fs.BoolVar(&o.yes, "yes", false, "really reset the caller's counts")
	} else {
		fs.BoolVar(&o.json, "json", false, "print JSON")
	}
	if err := fs.Parse(args); err != nil {
		return o, errUsage
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if o.consumer != "" && o.ip != "" {
		return o, fmt.Errorf("-consumer and -ip together: %w", errUsage)
	}
	if o.ip != "" {
		ip, err := netip.ParseAddr(o.ip)
		if err != nil {
			return o, fmt.Errorf("-ip %q is not an IP address", o.ip)
		}
		o.ip = ip.String()
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time) error {
	if len(args) > 0 {
		switch args[0] {
		case "reset":
			return reset(ctx, args[1:], stdout, stderr)
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			return nil
		}
	}
	o, err := parse("genderize-usage", args, stderr)
	if err != nil {
		return err
	}
	cfg, err := loadKongYML(o.kongYML)
	if err != nil {
		return err
	}
	prefix, exact, err := selection(cfg, o)
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(cfg, o.quotaPath, false)
	if err != nil {
		return err
	}
	defer closeStore()
	counters, err := store.Usage(ctx, prefix)
	if err != nil {
		return err
	}
	var rows []row
	for _, u := range counters {
		if exact && u.Key != prefix {
			continue
		}
		rows = append(rows, cfg.describe(u, now))
	}
	if o.json {
		return writeJSON(stdout, rows)
	}
	return writeTable(stdout, rows)
}

// selection is the key prefix to list: one caller's key (exact) or all.
func selection(cfg *kongConfig, o options) (prefix string, exact bool, err error) {
	switch {
	case o.consumer != "":
		id, err := cfg.consumerID(o.consumer)
		if err != nil {
			return "", false, err
		}
		return "consumer:" + id, true, nil
	case o.ip != "":
		return "ip:" + o.ip, true, nil
	}
	return "", false, nil
}

func reset(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse("reset", args, stderr)
	if err != nil {
		return err
	}
	if o.consumer == "" && o.ip == "" {
		return fmt.Errorf("reset: which caller? give -consumer or -ip: %w", errUsage)
	}
	if !o.yes {
		return fmt.Errorf("reset: nothing changed; add -yes to reset the caller's counts: %w", errUsage)
	}
	cfg, err := loadKongYML(o.kongYML)
	if err != nil {
		return err
	}
	key, _, err := selection(cfg, o)
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(cfg, o.quotaPath, true)
	if err != nil {
		return err
	}
	defer closeStore()
	n, err := store.Reset(ctx, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reset %s: %d window counters removed\n", key, n)
	return nil
}

// openStore opens the plugin's quota store: the local file directly
// (read-only unless writable), any other policy through the registry.
func openStore(cfg *kongConfig, quotaPath string, writable bool) (quota.Inspector, func(), error) {
	policy := cfg.plugin.QuotaPolicy
	if policy == "" || policy == "local" || quotaPath != "" {
		path := quotaPath
		if path == "" {
			path = cfg.plugin.QuotaPath
		}
		c, err := quota.OpenLocalCounters(path, writable)
		if err != nil {
			return nil, nil, err
		}
		return c, func() { c.Close() }, nil
	}
	s, err := quota.Open(policy, cfg.storeOptions())
	if err != nil {
		return nil, nil, err
	}
	in, ok := s.(quota.Inspector)
	if !ok {
		return nil, nil, fmt.Errorf("quota policy %s cannot list its counters", policy)
	}
	// Stores from quota.Open are shared by the process and never closed;
	// the command's exit releases the connections.
	return in, func() {}, nil
}

// row is one caller's count in one window, as printed.
type row struct {
	Caller     string    `json:"caller"` // "consumer" or "ip"
	ConsumerID string    `json:"consumer_id,omitempty"`
	Username   string    `json:"username,omitempty"`
	IP         string    `json:"ip,omitempty"`
	Plan       string    `json:"plan,omitempty"` // "" when unknown
	Limit      *int      `json:"limit"`          // nil when unknown
	Used       int       `json:"used"`
	Remaining  *int      `json:"remaining"` // nil when the limit is unknown
	Start      time.Time `json:"window_start"`
	End        time.Time `json:"window_end"`
	Ended      bool      `json:"ended"`
}

func writeJSON(w io.Writer, rows []row) error {
	if rows == nil {
		rows = []row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

func writeTable(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLER\tPLAN\tLIMIT\tUSED\tREMAINING\tWINDOW END")
	for _, r := range rows {
		who := r.IP
		if r.Caller == "consumer" {
			who = r.ConsumerID
			if r.Username != "" {
				who = r.Username + " (" + r.ConsumerID + ")"
			}
		}
		limit, remaining := "?", "?"
		if r.Limit != nil {
			limit, remaining = fmt.Sprint(*r.Limit), fmt.Sprint(*r.Remaining)
		}
		end := r.End.Format(time.RFC3339)
		if r.Ended {
			end += " (ended)"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%d\t%s\t%s\n", r.Caller, who, cmp.Or(r.Plan, "?"), limit, r.Used, remaining, end)
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "(no counters)")
	}
	return tw.Flush()
}
