"""The only place that names concrete classes: the config checks that need the code, the
stores, the upstreams, the event sinks, the call chain, and `compose` that builds a gateway's
parts from them."""
