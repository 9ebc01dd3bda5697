package frontier

// StoreLevels is storeLevels, for tests that create a bare queue and
// backlog: the frontier store's znodes for groups groups.
func StoreLevels(groups int) ([][]string, error) { return storeLevels(groups) }
