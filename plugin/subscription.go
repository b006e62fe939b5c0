package plugin

import (
	"fmt"
	"strings"
	"time"
)

// Plans and subscription state ride on consumer tags (Kong OSS has no
// consumer groups); GetConsumer delivers them at no extra cost:
//
//	plan:NAME                 the plan, one of the config's plans
//	subscription:STATE        active, or anything else (paused, expired, unpaid)
//	paid-until:YYYY-MM-DD     paid through that UTC day, inclusive
const (
	planTag         = "plan:"
	subscriptionTag = "subscription:"
	paidUntilTag    = "paid-until:"
)

// subscription is what a keyed consumer's tags say.
type subscription struct {
	planName string
	plan     Plan
	// known is false when the plan is not in the config (or tags name
	// several plans): the consumer is refused and the operator told.
	known bool
	// inactive says why the subscription is not active, "" when it is.
	inactive string
	// bad is set when a tag could not be understood: worth a log line.
	bad string
}

// subscriptionOf reads a consumer's tags at now. No plan tag means the
// default plan; no subscription tag means active.
func subscriptionOf(tags []string, plans Plans, defaultPlan string, now time.Time) subscription {
	var s subscription
	for _, tag := range tags {
		switch {
		case strings.HasPrefix(tag, planTag):
			name := tag[len(planTag):]
			if s.planName != "" && s.planName != name {
				s.bad = fmt.Sprintf("conflicting plan tags %q and %q", planTag+s.planName, tag)
				s.planName = ""
				s.known = false
				return s
			}
			s.planName = name
		case strings.HasPrefix(tag, subscriptionTag):
			if state := tag[len(subscriptionTag):]; state != "active" && s.inactive == "" {
				s.inactive = "subscription " + state
			}
		case strings.HasPrefix(tag, paidUntilTag):
			value := tag[len(paidUntilTag):]
			day, err := time.Parse(time.DateOnly, value)
			if err != nil {
				s.bad = fmt.Sprintf("unparsable tag %q (want %sYYYY-MM-DD)", tag, paidUntilTag)
				if s.inactive == "" {
					s.inactive = "paid-until unreadable"
				}
				continue
			}
			// Paid through the whole of that UTC day.
			if !now.Before(day.AddDate(0, 0, 1)) && s.inactive == "" {
				s.inactive = "paid until " + value
			}
		}
	}
	if s.planName == "" {
		s.planName = defaultPlan
	}
	s.plan, s.known = plans[s.planName]
	return s
}
