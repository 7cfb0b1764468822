package cleolease

import "context"

// coldOpen runs pending migrations the first time this process connects to
// the file (see migrate/). Placeholder until the migration runner lands.
func (c *Connector) coldOpen(ctx context.Context) error { return nil }
