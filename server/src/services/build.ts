import fs from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { createMailTransport, type MailTransport } from '../mail/transport.ts';
import { createIdTokenVerifier, type IdTokenVerifier } from '../security/id-token-verifier.ts';
import { createPhiCrypto } from '../security/phi-crypto.ts';
import { loadPhiKeyFile, parseKeyFile, phiKeyFileOf, type PhiKeyFile } from '../security/phi-keyring.ts';
import { loadSigningKeys } from '../security/signing-keys.ts';
import { createServices, type Services } from './index.ts';

export interface BuildServicesOptions {
  readonly clock?: Clock | undefined;
  readonly idTokens?: IdTokenVerifier | undefined;
  readonly mailTransport?: MailTransport | undefined;
}

export interface BuiltServices {
  readonly services: Services;
  /** Releases what the services hold besides the database (the mail transport). */
  close(): void;
}

/**
 * Wires the services from config the same way for every process that runs them: the server
 * (runtime.ts) and the CLI when it works on the database itself. Signing keys come from
 * JWT_PRIVATE_JWKS or the data dir, the PHI key ring from PHI_KEYS or the data dir, mail goes to SMTP_URL or the data dir's .eml sink.
 */
export async function buildServices(config: Config, db: Db, opts: BuildServicesOptions = {}): Promise<BuiltServices> {
  const signingKeys = await loadSigningKeys({ privateJwks: config.jwt.privateJwks, dataDir: config.dataDir });
  const mailTransport =
    opts.mailTransport ?? createMailTransport({ smtpUrl: config.mail.smtpUrl, from: config.mail.from, dataDir: config.dataDir });
  const idTokens =
    opts.idTokens ?? createIdTokenVerifier({ providers: { google: config.social.google, apple: config.social.apple } });
  const phiKeyFile = phiKeyFileOf(config.dataDir);
  const initialKeys = await loadPhiKeyFile({ phiKeys: config.phiKeys, dataDir: config.dataDir });
  const phi = createPhiCrypto(initialKeys, {
    // A key file can be rotated by another process (the CLI on PostgreSQL); PHI_KEYS cannot.
    ...(config.phiKeys ? {} : { reload: () => readPhiKeyFileSync(phiKeyFile) }),
  });
  // The reload above runs when a value names a key this ring lacks; a search finds no value to
  // open, and after the other process makes the names' tokens again under a new index key, this
  // ring's tokens would match nothing. So the file is also watched: a rotation installs here as
  // soon as its file is renamed into place.
  const watcher = config.phiKeys ? null : watchKeyFile(phiKeyFile, initialKeys, (file) => phi.install(file));
  const services = createServices({ config, db, clock: opts.clock ?? systemClock, signingKeys, idTokens, mailTransport, phi });
  return {
    services,
    close: () => {
      watcher?.close();
      mailTransport.close();
    },
  };
}

/**
 * Calls `changed` with the key file each time another one is renamed into place (rotation
 * writes a temporary file and renames it). Watches the directory: the file's own inode is
 * replaced by the rename. Does not keep the process alive.
 */
function watchKeyFile(file: string, installed: PhiKeyFile, changed: (file: PhiKeyFile) => void): fs.FSWatcher | null {
  let last = JSON.stringify(installed);
  let timer: NodeJS.Timeout | null = null;
  const reread = () => {
    timer = null;
    const next = readPhiKeyFileSync(file);
    const text = next && JSON.stringify(next);
    if (!next || text === last) return;
    last = text as string;
    changed(next);
  };
  try {
    const watcher = fs.watch(path.dirname(file), (_event, name) => {
      if (name !== path.basename(file) || timer) return;
      timer = setTimeout(reread, 50);
      timer.unref();
    });
    watcher.unref();
    // A watch that fails later (the directory removed) is nothing to act on: decrypts still reload.
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return null;
  }
}

function readPhiKeyFileSync(file: string): PhiKeyFile | null {
  try {
    return parseKeyFile(fs.readFileSync(file, 'utf8'), file);
  } catch {
    return null;
  }
}
