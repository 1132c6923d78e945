/**
 * The operator CLI as operators run it: a child process (the production build under `npm test`,
 * else `node cli/bin/fieldchart.js`, what `npx fieldchart` runs) on a real data dir, alone, next to a real server process on the same
 * embedded database (then it must go through the server's admin socket and never open the
 * directory), and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { lockFileOf } from '@fieldchart/server';
import { backends, seedPgliteDataDir } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { cliJson, deadPid, killAllServers, repoRoot, runCli, spawnServer, type ServerProcess, apiRequest as http } from '../helpers/processes.ts';
import { newAccount, registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-cli-'));
  tempDirs.push(dir);
  return dir;
}

after(async () => {
  await killAllServers();
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

const journal = JSON.parse(fs.readFileSync(path.join(repoRoot, 'server/migrations/meta/_journal.json'), 'utf8')) as {
  entries: unknown[];
};
const schemaMigrations = journal.entries.length;


describe('fieldchart CLI: usage', () => {
  test('--help lists the commands, and every command has --help', async () => {
    const env = { FIELDCHART_DATA_DIR: tempDir() };
    const [top, user, mail, userList, mailShow, migrate, serve] = await Promise.all([
      runCli(['--help'], env),
      runCli(['user', '--help'], env),
      runCli(['mail', '--help'], env),
      runCli(['user', 'list', '--help'], env),
      runCli(['mail', 'show', '--help'], env),
      runCli(['migrate', '--help'], env),
      runCli(['serve', '--help'], env),
    ]);
    for (const r of [top, user, mail, userList, mailShow, migrate, serve]) {
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^Usage: fieldchart/);
    }
    for (const c of ['serve', 'migrate', 'user', 'mail']) assert.match(top.stdout, new RegExp(`^  ${c}\\b`, 'm'));
    assert.match(top.stdout, /--json/);
    for (const c of ['list', 'show', 'disable', 'enable']) assert.match(user.stdout, new RegExp(`^  ${c}\\b`, 'm'));
    for (const c of ['list', 'show']) assert.match(mail.stdout, new RegExp(`^  ${c}\\b`, 'm'));
    assert.match(userList.stdout, /--search/);
    assert.match(userList.stdout, /--disabled/);
    assert.match(userList.stdout, /--limit/);
    assert.match(mailShow.stdout, /<id>/);
    // Help never touches the database.
    assert.deepEqual(fs.readdirSync(env.FIELDCHART_DATA_DIR), []);
  });

  test('bad usage exits 2; invalid configuration exits non-zero naming the variable', async () => {
    const env = { FIELDCHART_DATA_DIR: tempDir() };
    const [unknown, badLimit, missingArg, badPort] = await Promise.all([
      runCli(['frobnicate'], env),
      runCli(['user', 'list', '--limit', 'abc'], env),
      runCli(['user', 'show'], env),
      runCli(['user', 'list'], { ...env, PORT: 'abc' }),
    ]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'frobnicate'/);
    assert.equal(badLimit.code, 2);
    assert.match(badLimit.stderr, /--limit.*'abc' is invalid/);
    assert.equal(missingArg.code, 2);
    assert.match(missingArg.stderr, /missing required argument 'user'/);
    assert.equal(badPort.code, 78);
    assert.match(badPort.stderr, /PORT/);
    assert.equal(badPort.stdout, '');
  });
});

describe('fieldchart CLI on the embedded database', () => {
  let dataDir: string;
  let env: Record<string, string>;
  before(() => {
    dataDir = tempDir();
    env = { FIELDCHART_DATA_DIR: dataDir };
  });

  test('migrate on a new data dir applies every migration and releases the lock', async () => {
    const first = await runCli(['migrate', '--verbose'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`up to date: ${schemaMigrations} schema migrations? and \\d+ job queue migrations applied`));
    assert.match(first.stderr, /opened the embedded database/);
    const again = await cliJson(['migrate'], env);
    assert.equal(again.applied, schemaMigrations);
    assert.ok(again.job_queue > 0);
    assert.equal(fs.existsSync(lockFileOf(dataDir)), false, 'the CLI released its lock');
  });

  test('user list and mail list on an idle data dir are empty; unknown records exit 1', async () => {
    const [users, mail] = await Promise.all([cliJson(['user', 'list'], env), cliJson(['mail', 'list'], env)]);
    assert.deepEqual(users, { total: 0, items: [] });
    assert.deepEqual(mail, []);
    const text = await runCli(['user', 'list'], env);
    assert.equal(text.stdout, 'No accounts.\n');

    const missingUser = await runCli(['user', 'show', 'nobody@example.test'], env);
    assert.equal(missingUser.code, 1);
    assert.match(missingUser.stderr, /User not found/);
    assert.equal(missingUser.stdout, '');
    const missingUuid = await runCli(['user', 'disable', randomUUID()], env);
    assert.equal(missingUuid.code, 1);
    assert.match(missingUuid.stderr, /User not found/);
    // 36 hex-ish characters that are no uuid: a miss, not a database type error.
    const notAUuid = await runCli(['user', 'show', 'a'.repeat(36)], env);
    assert.equal(notAUuid.code, 1);
    assert.match(notAUuid.stderr, /User not found/);
    const missingMail = await runCli(['mail', 'show', randomUUID()], env);
    assert.equal(missingMail.code, 1);
    assert.match(missingMail.stderr, /No mail with this id/);
    const notAnId = await runCli(['mail', 'show', 'not-an-id'], env);
    assert.equal(notAnId.code, 1);
    assert.match(notAnId.stderr, /No mail with this id/);
  });

  test('commands started together on an idle data dir take turns on the lock', async () => {
    // --json is global: before or after the command.
    const runs = await Promise.all([
      runCli(['--json', 'user', 'list'], env),
      runCli(['user', 'list', '--json'], env),
      runCli(['user', '--json', 'list'], env),
    ]);
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { total: 0, items: [] });
    }
  });

  describe('while a server runs on the same data dir', () => {
    let server: ServerProcess;
    let base: string;
    let ann: Awaited<ReturnType<typeof register>>;
    let bob: Awaited<ReturnType<typeof register>>;
    /** Outputs captured through the socket, compared with the local path after the server stops. */
    const throughSocket: Record<string, string> = {};
    const compared = (id: string): string[][] => [
      ['user', 'list'],
      ['--json', 'user', 'list', '--disabled'],
      ['user', 'show', ann.email],
      ['--json', 'user', 'show', ann.uuid],
      ['mail', 'list'],
      ['--json', 'mail', 'show', id],
      ['migrate'],
    ];
    let mailId = '';

    async function register(overrides: Parameters<typeof newAccount>[0] = {}) {
      const account = newAccount(overrides);
      const res = await http(base, 'POST', '/register', { body: account });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return { ...account, token: res.body.data.token as string, uuid: res.body.data.user.uuid as string };
    }

    before(async () => {
      server = spawnServer({ FIELDCHART_DATA_DIR: dataDir });
      base = await server.url();
    });
    after(async () => {
      await server.stop();
    });

    test('the CLI sees what the server just wrote, through its admin socket', async () => {
      ann = await register({ first_name: 'Ann', last_name: 'Socket' });
      bob = await register({ first_name: 'Bob', last_name: 'Socket' });
      const run = await runCli(['--json', '--verbose', 'user', 'list'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, new RegExp(`through the admin socket of server process ${server.pid}`));
      const list = JSON.parse(run.stdout);
      assert.equal(list.total, 2);
      assert.deepEqual(
        list.items.map((u: any) => [u.uuid, u.email, u.disabled]),
        [
          [ann.uuid, ann.email, false],
          [bob.uuid, bob.email, false],
        ],
      );
      const searched = await cliJson(['user', 'list', '--search', 'bob', '--limit', '5'], env);
      assert.deepEqual(
        searched.items.map((u: any) => u.email),
        [bob.email],
      );

      const shown = await cliJson(['user', 'show', ann.email], env);
      const profile = await http(base, 'GET', '/my-profile', { token: ann.token });
      assert.deepEqual(shown, { ...profile.body.data, disabled_at: null });
      const text = await runCli(['user', 'show', ann.uuid], env);
      assert.match(text.stdout, new RegExp(`^email: +${ann.email.replace(/[.+]/g, '\\$&')}$`, 'm'));

      const migrate = await runCli(['migrate'], env);
      assert.equal(migrate.code, 0, migrate.stderr);
      assert.match(migrate.stdout, new RegExp(`up to date: ${schemaMigrations} schema migration`));
    });

    test('the CLI never opens the directory: the server keeps its lock and a second server is refused', async () => {
      const lock = JSON.parse(fs.readFileSync(lockFileOf(dataDir), 'utf8'));
      assert.equal(lock.pid, server.pid);
      assert.equal(lock.owner, 'server');

      const second = spawnServer({ FIELDCHART_DATA_DIR: dataDir });
      const exit = await second.exited;
      assert.equal(exit.code, 75);
      assert.match(second.stderr(), new RegExp(`in use by server process ${server.pid}`));
      // The first server is unaffected and still writing; the CLI still reads it live.
      const carol = await register({ first_name: 'Carol' });
      const list = await cliJson(['user', 'list', '--search', carol.email], env);
      assert.deepEqual(
        list.items.map((u: any) => u.uuid),
        [carol.uuid],
      );
    });

    test('mail the server sent is listed and shown with its .eml', async () => {
      const sent = await http(base, 'POST', '/forgot-password/send-otp', { body: { email: ann.email } });
      assert.equal(sent.status, 200);
      const mail = await eventually(
        async () => {
          const items = await cliJson<any[]>(['mail', 'list'], env);
          const found = items.find((m) => m.to === ann.email && m.status === 'sent');
          assert.ok(found, 'the reset mail is sent');
          return found;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      assert.equal(mail.kind, 'password_reset_code');
      assert.ok(mail.stored_as.startsWith(path.join(dataDir, 'mail')));
      mailId = mail.id;

      const shown = await runCli(['mail', 'show', mail.id], env);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, new RegExp(`^To: ${ann.email.replace(/[.+]/g, '\\$&')}$`, 'm'));
      assert.match(shown.stdout, /password reset code is \d{6}/);
      const json = await cliJson(['mail', 'show', mail.id], env);
      assert.equal(json.eml, fs.readFileSync(mail.stored_as, 'utf8'));
      // A second mail, so that --limit 1 has something to leave out.
      const other = await http(base, 'POST', '/forgot-password/send-otp', { body: { email: bob.email } });
      assert.equal(other.status, 200);
      const all = await eventually(
        async () => {
          const items = await cliJson<any[]>(['mail', 'list'], env);
          assert.equal(items.length, 2);
          return items;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      const limited = await cliJson<any[]>(['mail', 'list', '--limit', '1'], env);
      assert.equal(limited.length, 1);
      assert.equal(limited[0].id, all[0].id, 'the newest first');
    });

    test('a user disabled through the CLI is refused at once; enabling lets them sign in again', async () => {
      const disabled = await cliJson(['user', 'disable', ann.uuid], env);
      assert.equal(disabled.uuid, ann.uuid);
      assert.ok(disabled.disabled_at);

      const signIn = await http(base, 'POST', '/sign-in', { body: { email: ann.email, password: ann.password } });
      assert.equal(signIn.status, 401);
      assert.equal(signIn.body.code, 'account_disabled');
      const withOldToken = await http(base, 'GET', '/my-profile', { token: ann.token });
      assert.equal(withOldToken.status, 401);
      // Bob is untouched.
      assert.equal((await http(base, 'GET', '/my-profile', { token: bob.token })).status, 200);

      const onlyDisabled = await cliJson(['user', 'list', '--disabled'], env);
      assert.deepEqual(
        onlyDisabled.items.map((u: any) => u.uuid),
        [ann.uuid],
      );
      const text = await runCli(['user', 'disable', ann.email], env);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^Disabled .*every session is revoked/);

      const enabled = await runCli(['user', 'enable', ann.email], env);
      assert.equal(enabled.code, 0, enabled.stderr);
      assert.match(enabled.stdout, /^Enabled /);
      const again = await http(base, 'POST', '/sign-in', { body: { email: ann.email, password: ann.password } });
      assert.equal(again.status, 200);
      // Sessions revoked by the disable stay revoked.
      assert.equal((await http(base, 'GET', '/my-profile', { token: ann.token })).status, 401);
      await cliJson(['user', 'disable', bob.email], env); // leaves one disabled user for the comparison below

      // The server answers these side by side; the local path below takes turns on the lock.
      await Promise.all(
        compared(mailId).map(async (args) => {
          const run = await runCli(args, env);
          assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
          throughSocket[args.join(' ')] = run.stdout;
        }),
      );
      const bad = await runCli(['user', 'show', 'nobody@example.test'], env);
      assert.equal(bad.code, 1);
      throughSocket.error = bad.stderr;
    });

    test('after the server stops, the CLI opens the directory itself and prints the same output', async () => {
      const exit = await server.stop();
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.equal(fs.existsSync(lockFileOf(dataDir)), false);

      const probe = await runCli(['--verbose', 'user', 'list'], env);
      assert.match(probe.stderr, /opened the embedded database/);
      for (const args of compared(mailId)) {
        const run = await runCli(args, env);
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        assert.equal(run.stdout, throughSocket[args.join(' ')], `same output for: fieldchart ${args.join(' ')}`);
      }
      const bad = await runCli(['user', 'show', 'nobody@example.test'], env);
      assert.equal(bad.code, 1);
      assert.equal(bad.stderr, throughSocket.error);
    });
  });

  test('a stale lock left by a dead process is taken over', async () => {
    const lockFile = lockFileOf(dataDir);
    const pid = await deadPid();
    fs.writeFileSync(
      lockFile,
      JSON.stringify({ pid, owner: 'server', adminSocket: path.join(dataDir, 'admin.sock'), startedAt: new Date().toISOString() }),
    );
    const run = await runCli(['--json', '--verbose', 'user', 'list'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /opened the embedded database/);
    assert.equal(JSON.parse(run.stdout).total, 3);
    assert.equal(fs.existsSync(lockFile), false);
  });
});

describe('fieldchart serve', () => {
  test('starts the server like npm start; the CLI then goes through its socket; SIGTERM exits 0', async () => {
    const dataDir = tempDir();
    // A first start on an empty dir is the lifecycle suite's and 'migrate on a new data dir''s.
    await seedPgliteDataDir(path.join(dataDir, 'pgdata'));
    const env = { FIELDCHART_DATA_DIR: dataDir };
    const server = spawnServer(env, { via: 'cli' });
    const base = await server.url(120_000);
    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200);
    const lock = JSON.parse(fs.readFileSync(lockFileOf(dataDir), 'utf8'));
    assert.deepEqual([lock.pid, lock.owner], [server.pid, 'server']);
    const run = await runCli(['--verbose', '--json', 'migrate'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, new RegExp(`admin socket of server process ${server.pid}`));
    assert.equal(JSON.parse(run.stdout).applied, schemaMigrations);
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
    assert.equal(fs.existsSync(lockFileOf(dataDir)), false);
  });
});

const pgBackend = backends.find((b) => b.name === 'postgres');

describe('fieldchart CLI on PostgreSQL', { skip: pgBackend ? false : 'TEST_DATABASE_URL is not set' }, () => {
  let server: TestServer;
  let env: Record<string, string>;
  before(async () => {
    if (!pgBackend) return;
    server = await startTestServer(pgBackend);
    // The server's own database and data dir (its signing keys); no lock, no socket on PostgreSQL.
    env = { DATABASE_URL: server.db.url ?? '', FIELDCHART_DATA_DIR: server.dataDir };
  });
  after(async () => {
    await server?.close();
  });

  test('migrate applies every migration to an empty database', async () => {
    const adminUrl = process.env.TEST_DATABASE_URL ?? '';
    const name = `fc_cli_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    try {
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      const run = await runCli(['--verbose', 'migrate'], { DATABASE_URL: url.toString(), FIELDCHART_DATA_DIR: tempDir() });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`up to date: ${schemaMigrations} schema migrations? and \\d+ job queue migrations applied`));
      assert.match(run.stderr, new RegExp(`connected to PostgreSQL at [^ ]+/${name}`));
      assert.doesNotMatch(run.stderr, /postgres:\/\//, 'no URL (and no password) in the output');
      const again = await cliJson(['migrate'], { DATABASE_URL: url.toString(), FIELDCHART_DATA_DIR: tempDir() });
      assert.equal(again.applied, schemaMigrations);
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  });

  test('the CLI works on the live database next to a running server', async () => {
    assert.deepEqual(await cliJson(['user', 'list'], env), { total: 0, items: [] });
    const u = await registerUser(server);
    const list = await cliJson(['user', 'list'], env);
    assert.deepEqual(
      list.items.map((x: any) => x.uuid),
      [u.uuid],
    );
    assert.equal(fs.existsSync(lockFileOf(server.dataDir)), false, 'no data-dir lock on PostgreSQL');

    const shown = await cliJson(['user', 'show', u.email], env);
    assert.equal(shown.uuid, u.uuid);
    assert.equal(shown.disabled_at, null);

    await cliJson(['user', 'disable', u.email], env);
    const signIn = await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } });
    assert.equal(signIn.status, 401);
    assert.equal(signIn.body.code, 'account_disabled');
    assert.equal((await server.api('GET', '/my-profile', { token: u.token })).status, 401);
    await cliJson(['user', 'enable', u.uuid], env);
    assert.equal((await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } })).status, 200);

    const missing = await runCli(['user', 'show', 'nobody@example.test'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /User not found/);
  });

  test('mail sent over SMTP is listed; its body is not kept', async () => {
    const u = await registerUser(server);
    assert.equal((await server.api('POST', '/forgot-password/send-otp', { body: { email: u.email } })).status, 200);
    await server.mail.waitFor(u.email);
    const mail = await eventually(
      async () => {
        const items = await cliJson<any[]>(['mail', 'list'], env);
        const found = items.find((m) => m.to === u.email && m.status === 'sent');
        assert.ok(found, 'not yet: found');
        return found;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    assert.equal(mail.stored_as, null);
    const shown = await runCli(['mail', 'show', mail.id], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /the message body is not stored/);
  });
});
