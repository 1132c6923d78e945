/**
 * The STT stand-in as its own process (as a real transcription service would be), so its
 * multipart parsing does not count against the API's event loop in measurements. Prints its
 * URL on the first line of stdout; answers every request with the verbose_json given as the
 * first argument.
 */
import { startSttStandIn } from './stt-stand-in.ts';

const answer: unknown = JSON.parse(process.argv[2] ?? '{}');
const standIn = await startSttStandIn();
standIn.script({ status: 200, json: answer });
process.stdout.write(`${standIn.url}\n`);
process.on('SIGTERM', () => void standIn.close().then(() => process.exit(0)));
