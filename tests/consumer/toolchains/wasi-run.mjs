// Runs a WASI program (a .wasm module with a main) in node: node wasi-run.mjs <module> [args...].
// Its exit code is the program's; stdout and stderr are node's.
import { readFile } from 'node:fs/promises';
import process, { argv, env, exit } from 'node:process';

process.removeAllListeners('warning');  // node says WASI is experimental on every run
process.on('warning', (w) => { if (w.name !== 'ExperimentalWarning') console.warn(w); });
const { WASI } = await import('node:wasi');
const wasi = new WASI({ version: 'preview1', args: argv.slice(2), env, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(argv[2]));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
exit(wasi.start(instance));
