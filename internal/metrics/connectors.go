package metrics

import "bufio"

// ConnectorFigures are one chat connector's figures as its connector keeps
// them since the process started, read on each scrape
// (Options.Connectors).
type ConnectorFigures struct {
	Name     string // the integration row's name
	Platform string // telegram, discord, slack
	Up       bool   // connected
	Queue    int    // replies not yet delivered
	// Counters since the process started.
	Received, Delivered, Retried, Failed, Edits uint64
	Refused                                     map[string]uint64 // by reason: pairing, allowlist, group, mention, bot, limit
}

// connectorFamilies are the connectors' metrics, in exposition order, each
// with what it reads of a connector's figures.
// withPlatform adds the platform label.
var connectorFamilies = []struct {
	name, typ, help string
	withPlatform    bool
	value           func(ConnectorFigures) float64
}{
	{"agentd_connector_received_total", typeCounter, "Messages a chat connector received from its platform (refused ones too).", true,
		func(f ConnectorFigures) float64 { return float64(f.Received) }},
	{"agentd_connector_delivered_total", typeCounter, "Replies and notices a chat connector delivered.", false,
		func(f ConnectorFigures) float64 { return float64(f.Delivered) }},
	{"agentd_connector_retries_total", typeCounter, "Deliveries a chat connector tried again (rate limited, a failed call, markup refused).", false,
		func(f ConnectorFigures) float64 { return float64(f.Retried) }},
	{"agentd_connector_failed_total", typeCounter, "Replies a chat connector finally failed to deliver (each is a delivery event in its session).", false,
		func(f ConnectorFigures) float64 { return float64(f.Failed) }},
	{"agentd_connector_edits_total", typeCounter, "Edits of messages in place while replies streamed.", false,
		func(f ConnectorFigures) float64 { return float64(f.Edits) }},
	{"agentd_connector_queue", typeGauge, "Replies a chat connector has not delivered yet (streaming, pending, sending).", false,
		func(f ConnectorFigures) float64 { return float64(f.Queue) }},
	{"agentd_connector_up", typeGauge, "1 while a chat connector is connected to its platform, else 0.", false,
		func(f ConnectorFigures) float64 {
			if f.Up {
				return 1
			}
			return 0
		}},
}

// writeConnectors writes the connectors' metrics; none without
// connectors.
func (c *Collector) writeConnectors(w *bufio.Writer) {
	if c.o.Connectors == nil {
		return
	}
	figs := c.o.Connectors()
	if len(figs) == 0 {
		return
	}
	for _, cf := range connectorFamilies {
		labels := []string{"connector"}
		if cf.withPlatform {
			labels = append(labels, "platform")
		}
		f := newFamily(cf.name, cf.typ, cf.help, c.o.MaxSeries, nil, labels...)
		for _, fig := range figs {
			values := []string{labelValue(fig.Name)}
			if cf.withPlatform {
				values = append(values, labelValue(fig.Platform))
			}
			f.add(cf.value(fig), values...)
		}
		writeFamily(w, f)
	}
	c.writeRefused(w, figs)
}

// writeRefused writes agentd_connector_refused_total, by reason.
func (c *Collector) writeRefused(w *bufio.Writer, figs []ConnectorFigures) {
	f := newFamily("agentd_connector_refused_total", typeCounter,
		"Messages a chat connector refused, by reason (pairing, allowlist, group, mention, bot, limit).", c.o.MaxSeries, nil, "connector", "reason")
	for _, fig := range figs {
		for reason, n := range fig.Refused {
			f.add(float64(n), labelValue(fig.Name), labelValue(reason))
		}
	}
	if len(f.series) > 0 {
		writeFamily(w, f)
	}
}
