package nodeimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// skipInLayer are the folders whose content belongs to the running system,
// not to an image: their directory entries are kept, their content is not.
var skipInLayer = map[string]bool{"proc": true, "sys": true, "dev": true, "run": true, "tmp": true}

// tarWriter writes a root filesystem (or part of one) as an image layer,
// keeping owners, modes, hard links and file capabilities (ping needs
// security.capability), with entries in a stable order so equal trees make
// equal layers.
type tarWriter struct {
	tw    *tar.Writer
	links map[uint64]string // inode -> first path written
}

func newTarWriter(w io.Writer) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), links: map[uint64]string{}}
}

func (t *tarWriter) Close() error { return t.tw.Close() }

// addTree writes every entry under root. exclude, given a path relative to
// root, can drop entries.
func (t *tarWriter) addTree(root string, exclude func(rel string) bool) error {
	return walkSorted(root, func(rel string, fi fs.FileInfo) (bool, error) {
		if exclude != nil && exclude(rel) {
			return false, nil
		}
		if err := t.addEntry(root, rel, fi); err != nil {
			return false, err
		}
		return !(fi.IsDir() && skipInLayer[rel]), nil
	})
}

// addEntry writes one file at root/rel under the name rel.
func (t *tarWriter) addEntry(root, rel string, fi fs.FileInfo) error {
	full := filepath.Join(root, rel)
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(full); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", full, err)
	}
	hdr.Name = rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.Format = tar.FormatPAX
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st != nil {
		hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		if fi.Mode().IsRegular() && st.Nlink > 1 {
			if first, ok := t.links[st.Ino]; ok {
				hdr.Typeflag = tar.TypeLink
				hdr.Linkname = first
				hdr.Size = 0
				return t.tw.WriteHeader(hdr)
			}
			t.links[st.Ino] = rel
		}
	}
	if fi.Mode().IsRegular() {
		if v, err := getxattr(full, "security.capability"); err == nil && len(v) > 0 {
			hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": string(v)}
		}
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		f, err := os.Open(full)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(t.tw, f); err != nil {
			return fmt.Errorf("%s: %w", full, err)
		}
	}
	return nil
}

// addFile writes a file that exists only in memory.
func (t *tarWriter) addFile(name string, mode int64, content []byte) error {
	if err := t.tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := t.tw.Write(content)
	return err
}

// addDir writes a directory entry.
func (t *tarWriter) addDir(name string) error {
	return t.tw.WriteHeader(&tar.Header{Name: strings.TrimSuffix(name, "/") + "/", Mode: 0o755, Typeflag: tar.TypeDir, Format: tar.FormatPAX})
}

// addSymlink writes a symbolic link.
func (t *tarWriter) addSymlink(name, target string) error {
	return t.tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Mode: 0o777, Typeflag: tar.TypeSymlink, Format: tar.FormatPAX})
}

// addDiff writes what changed from base to upper: new and changed entries,
// and an OCI whiteout for each entry upper no longer has. exclude, given a
// path relative to upper, can drop entries the caller writes itself.
func (t *tarWriter) addDiff(base, upper string, exclude func(rel string) bool) error {
	err := walkSorted(upper, func(rel string, fi fs.FileInfo) (bool, error) {
		if skipInLayer[rel] {
			return false, nil
		}
		if exclude != nil && exclude(rel) {
			return !fi.IsDir(), nil
		}
		bfi, err := os.Lstat(filepath.Join(base, rel))
		if err == nil && sameEntry(filepath.Join(base, rel), filepath.Join(upper, rel), bfi, fi) {
			return true, nil
		}
		if err := t.addEntry(upper, rel, fi); err != nil {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return walkSorted(base, func(rel string, fi fs.FileInfo) (bool, error) {
		if skipInLayer[rel] {
			return false, nil
		}
		if _, err := os.Lstat(filepath.Join(upper, rel)); os.IsNotExist(err) {
			wh := filepath.Join(filepath.Dir(rel), ".wh."+filepath.Base(rel))
			return false, t.addFile(wh, 0o644, nil)
		}
		return true, nil
	})
}

func sameEntry(bpath, upath string, b, u fs.FileInfo) bool {
	if b.Mode() != u.Mode() {
		return false
	}
	bs, _ := b.Sys().(*syscall.Stat_t)
	us, _ := u.Sys().(*syscall.Stat_t)
	if bs != nil && us != nil && (bs.Uid != us.Uid || bs.Gid != us.Gid) {
		return false
	}
	switch {
	case u.IsDir():
		return true
	case u.Mode()&fs.ModeSymlink != 0:
		bl, _ := os.Readlink(bpath)
		ul, _ := os.Readlink(upath)
		return bl == ul
	default:
		return b.Size() == u.Size() && b.ModTime().Equal(u.ModTime())
	}
}

// walkSorted calls fn for every entry under root in lexical order, with
// paths relative to root; fn returns whether to descend into a directory.
func walkSorted(root string, fn func(rel string, fi fs.FileInfo) (bool, error)) error {
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, n := range names {
			r := filepath.Join(rel, n)
			fi, err := os.Lstat(filepath.Join(root, r))
			if err != nil {
				return err
			}
			descend, err := fn(r, fi)
			if err != nil {
				return err
			}
			if descend && fi.IsDir() {
				if err := walk(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("")
}

func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(path, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
