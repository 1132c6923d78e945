import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Creates `file` with `content` unless it exists, and answers what it holds afterwards: ours,
 * or the content of whichever process created it first. The content is written in full to a
 * private temporary file and fsynced before `link` gives it its name, so a process starting
 * at the same instant never reads a half-written key (a plain `wx` write let it read an empty
 * file), and a crash never leaves one: a key lost to a torn write is PHI lost with it.
 */
export async function createOnce(file: string, content: string): Promise<string> {
  const dir = path.dirname(file);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fs.open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.link(temporary, file);
    const directory = await fs.open(dir, 'r');
    await directory.sync().finally(() => directory.close());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await fs.rm(temporary, { force: true });
  }
  return fs.readFile(file, 'utf8');
}
