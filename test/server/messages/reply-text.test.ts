/** The pure rule that cuts quoted history and signatures out of an emailed reply. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { replyTokenOf, conversationIdOf } from '../../../server/src/services/messages/messages.ts';
import { stripQuotedReply } from '../../../server/src/services/messages/reply-text.ts';

test('Gmail/Apple attribution and > quotes are cut', () => {
  assert.equal(stripQuotedReply('Yes, 10am.\n\nOn Mon, Nov 23, 2026 at 9:12 AM Dana Reyes <reply+ab@x.test> wrote:\n> See you Tuesday\n> thanks'), 'Yes, 10am.');
  assert.equal(stripQuotedReply('Yes.\r\n\r\nOn Mon, Nov 23, 2026 at 9:12 AM Dana Reyes <\r\nreply+ab@x.test> wrote:\r\n> old'), 'Yes.', 'wrapped attribution, CRLF');
  assert.equal(stripQuotedReply('Oui.\n\nLe lun. 23 nov. 2026 à 09:12, Dana a écrit :\n> vieux'), 'Oui.');
});

test('Outlook: Original Message separator and From/Sent/To header blocks are cut', () => {
  assert.equal(stripQuotedReply('Fine by me.\n\n-----Original Message-----\nFrom: Dana\nSent: Monday\nTo: Pat\nSubject: Visit\n\nSee you'), 'Fine by me.');
  assert.equal(stripQuotedReply('Fine.\n\n________________________________\nFrom: Dana Reyes <reply+ab@x.test>\nSent: Monday, November 23, 2026 9:12 AM\nTo: Pat\nSubject: Visit\n\nSee you'), 'Fine.');
  assert.equal(stripQuotedReply('Fine.\n\nFrom: Dana Reyes\nDate: Monday\nSubject: Visit\n\nSee you'), 'Fine.');
  assert.equal(stripQuotedReply('From: my neighbour I heard the news.\nThanks'), 'From: my neighbour I heard the news.\nThanks', 'a sentence starting "From:" is kept');
});

test('signatures: "-- " delimiter and mobile footers', () => {
  assert.equal(stripQuotedReply('Thanks!\n-- \nPat Quinlan\n555-0100'), 'Thanks!');
  assert.equal(stripQuotedReply('Thanks!\n\nSent from my iPhone'), 'Thanks!');
  assert.equal(stripQuotedReply('Thanks!\n\nGet Outlook for Android'), 'Thanks!');
  assert.equal(stripQuotedReply('Sent from my iPhone'), '', 'nothing new');
});

test('inline answers between quotes keep the answers; plain text is untouched', () => {
  assert.equal(stripQuotedReply('> Tuesday?\nYes\n> 10am?\nNo, 11'), 'Yes\nNo, 11');
  assert.equal(stripQuotedReply('  Just a plain note.\n\n\n\nSecond paragraph.  '), 'Just a plain note.\n\nSecond paragraph.');
});

test('reply addresses and conversation ids parse strictly', () => {
  const token = 'a'.repeat(40);
  assert.equal(replyTokenOf(`reply+${token}@Replies.Example.test`, 'replies.example.test'), token);
  assert.equal(replyTokenOf(`REPLY+${token.toUpperCase()}@replies.example.test`, 'replies.example.test'), token, 'case folded');
  assert.equal(replyTokenOf(`reply+${token}@other.test`, 'replies.example.test'), null);
  assert.equal(replyTokenOf(`reply+${token}x@replies.example.test`, 'replies.example.test'), null);
  assert.equal(replyTokenOf('reply+@replies.example.test', 'replies.example.test'), null);
  assert.equal(replyTokenOf('no-at-sign', 'replies.example.test'), null);
  assert.deepEqual(['1', '42', '2147483647', '2147483648', '0', '01', '-1', '1.5', 'abc', ''].map(conversationIdOf), [1, 42, 2147483647, null, null, null, null, null, null, null]);
});
