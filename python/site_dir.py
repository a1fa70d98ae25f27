"""Prints the directory the pcr package installs into under PREFIX: the
interpreter's own package directory there (Debian's
/usr/local/lib/python3.X/dist-packages), else PREFIX's site-packages."""
import sys
import sysconfig

prefix = sys.argv[1].rstrip("/")
found = [p for p in sys.path if p.startswith(prefix + "/") and p.endswith(("site-packages", "dist-packages"))]
print(found[0] if found else sysconfig.get_path("platlib", "posix_prefix", {"base": prefix, "platbase": prefix}))
