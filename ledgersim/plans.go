package ledgersim

// planScratch holds the plans of the commands that run most (allocate, settle) and the
// holdings coin selection picks, reused from one command to the next: a plan lives from
// its check to its commit (or to the end of a prepare), under the write lock, and no two
// plans are alive at once. What outlives the plan (a prepared transaction's inputs,
// the contracts it creates) is always copied out of it.
type planScratch struct {
	allocate allocatePlan
	settle   settlePlan
	picked   []*Holding
	tx       tx
}
