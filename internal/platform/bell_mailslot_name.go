package platform

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// mailslotPrefix is the folder of every cleolease mailslot name.
const mailslotPrefix = `\\.\mailslot\cleolease\`

// maxMailslotID is the longest holder id a mailslot name spells out;
// a longer one is named by its hash.
const maxMailslotID = 100

// mailslotName returns the name of the mailslot that the engine whose
// holder id is id listens on for the database file whose identity is
// file (Windows' volume serial number and file index, see Stat):
// `\\.\mailslot\cleolease\<dev>-<ino>\<id>`, in hex, so that every
// process of the file, of any user, derives the same name from a holder
// id it reads in the lease table. Bytes of id outside [A-Za-z0-9._-] are
// written as %XX (a backslash would start a new name component); an id
// longer than maxMailslotID bytes (escaped) is replaced by "h" and the hex
// of the first 16 bytes of its SHA-256, so that names stay within
// Windows' limits.
func mailslotName(file FileID, id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	esc := b.String()
	if esc == "" || len(esc) > maxMailslotID {
		sum := sha256.Sum256([]byte(id))
		esc = fmt.Sprintf("h%x", sum[:16])
	}
	return fmt.Sprintf("%s%x-%x\\%s", mailslotPrefix, file.Dev, file.Ino, esc)
}
