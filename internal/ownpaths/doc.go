// Package ownpaths records the files this process creates in a workspace
// itself, so a check that moves aside what a sandboxed command created
// (agent/tool/workspace/local/sandbox) can tell the agent's own from the
// command's when both appear while the command runs.
//
// A path is claimed in two steps: Begin before the creation (a watcher
// may see the new name before the creator returns), and the returned
// func after it, which keeps the claim only when this process really
// created the file, by its device and inode. A name that someone else
// created first is therefore never covered: the creator gets "exists"
// and drops the claim. It imports nothing of the product.
//
// Layer: internal leaf under subagent/worktree and the sandbox. Concurrency:
// the claims are one process-wide set behind a mutex, each claim lives from
// Begin until the creator releases it; it must not import any package of
// this module.
package ownpaths
