"""Write the linker version script of the shared libwdirac: every function
declared in the public headers (include/*.h) is exported, nothing else.

    python3 runtime/export_map.py OUT HEADER...

A declaration is a line that starts in column 0 with a return type and
names a wd_ function before its opening parenthesis (typedefs excluded).
tests/test_install.sh checks the result against the headers with nm.
"""
import re
import sys

DECL = re.compile(r"^(?!typedef)(?:const\s+)?[A-Za-z_][\w ]*?[\s*]+(wd_\w+)\s*\(")


def exported(paths):
    names = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = DECL.match(line)
                if m and m.group(1) not in names:
                    names.append(m.group(1))
    return names


def main():
    out, headers = sys.argv[1], sys.argv[2:]
    names = exported(headers)
    text = "{\n  global:\n" + "".join(f"    {n};\n" for n in names) + "  local:\n    *;\n};\n"
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
