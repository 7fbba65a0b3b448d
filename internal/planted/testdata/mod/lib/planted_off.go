//go:build !simbugs

package lib

func plant() bool { return false }
