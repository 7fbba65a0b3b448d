// Package planted holds no code. Its test checks that the planted bugs
// of the simulators stay out of the library: no file of the module that
// is built without the tag simbugs imports a package named internal/bugs
// (conn/internal/bugs, front/internal/bugs). A package reaches its
// planted bugs through seams: functions declared twice, in a file built
// with the tag simbugs that reads the switches and in one built without
// it that does the production thing (see conn/planted.go and
// conn/planted_off.go).
package planted
