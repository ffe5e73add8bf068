// A file the command line names, read whole only when it is a regular file no larger than such a
// file can be: /dev/zero, a FIFO or a directory would otherwise hang, exhaust memory or fail
// with a bare EISDIR.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/** The file's bytes, or an error saying why not, starting with the path. */
export function readBounded(path: string, maxBytes: number, what: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    throw new Error(`${path}: cannot read ${what} (${(e as NodeJS.ErrnoException).code})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${path}: not a regular file: ${what} is read from one`);
    if (st.size > maxBytes) throw new Error(`${path}: ${st.size} bytes, more than ${what} can be (${maxBytes})`);
    const buffer = Buffer.alloc(st.size);
    let at = 0;
    while (at < st.size) {
      const n = readSync(fd, buffer, at, st.size - at, at);
      if (n === 0) break;
      at += n;
    }
    return buffer.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}
