/**
 * An assertion that `eventually` polls names its message. Without one, Node's `assert.ok`
 * builds "The expression evaluated to a falsy value" by reading the calling file from disk and
 * parsing it with acorn at the call's column. Under tsx the column is the compiled code's (one
 * long line) and the file read is the TypeScript source, so the expression is not found; for
 * some sizes of file Node's search then re-parses the same text, reading 0 more bytes each time,
 * until the stack overflows — minutes of a blocked event loop under load, with the device under
 * test frozen in the same process. That is how the client-level SIGKILL test "waited more than
 * 120 s" for a device at its first `assert.ok(killed)` poll. With a message, Node reads nothing.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import ts from 'typescript';

const testRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'fixtures' ? [] : testFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** `assert(x)` or `assert.ok(x)`: a truthiness check whose message Node would build from source. */
function isBareTruthCheck(call: ts.CallExpression): boolean {
  if (call.arguments.length !== 1) return false;
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return callee.text === 'assert';
  return ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'assert' && callee.name.text === 'ok';
}

/** `file:line: text` of every bare truth check inside the callback of an `eventually(...)` call. */
export function bareChecksInPolls(file: string, text = fs.readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const inside = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && isBareTruthCheck(node)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      found.push(`${path.relative(testRoot, file)}:${line + 1}: ${node.getText()}`);
    }
    ts.forEachChild(node, inside);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'eventually' && node.arguments[0]) {
      inside(node.arguments[0]);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('the checker finds a bare truth check in a poll and passes one with a message', () => {
  const bare = bareChecksInPolls('x.ts', 'await eventually(() => assert.ok(done), WAIT);\nawait eventually(async () => { assert(await ready()); });');
  assert.equal(bare.length, 2, bare.join('\n'));
  assert.deepEqual(bareChecksInPolls('x.ts', "await eventually(() => assert.ok(done, 'not done yet'));\nassert.ok(outside);"), []);
});

test('every assertion polled by eventually in test/ names its message', () => {
  const bare = testFiles(testRoot).flatMap((f) => bareChecksInPolls(f));
  assert.deepEqual(bare, [], `give these a message (Node would parse the file for one):\n${bare.join('\n')}`);
});
