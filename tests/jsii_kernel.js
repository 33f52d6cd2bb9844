// The jsii kernel, answering the Python process on its own stdin and stdout.
//
// jsii's own entry point (bin/jsii-runtime.js) starts the kernel (lib/program.js) as a second Node.js process and
// relays every request and response between the two, so that whatever JavaScript prints cannot mix with the
// protocol: the kernel speaks on file descriptor 3, and the relay wraps the kernel's stdout and stderr into
// {"stdout"|"stderr": base64} lines on its own stderr, which the Python side unwraps. The test suite makes some
// hundred thousand calls, each through the relay twice. This entry point runs lib/program.js, copied beside it,
// in this process instead: descriptor 3 becomes stdin for reads and stdout for writes, and what JavaScript prints
// (through process.stdout, process.stderr or descriptor 2) is wrapped into the same lines on stderr, so the
// protocol and the Python side are unchanged.
//
// jsii's entry point starts the kernel with --preserve-symlinks, and the kernel links each package from jsii's
// package cache as one symbolic link only when process.execArgv has that option; without it, it rebuilds each
// package's tree file by file. Node.js takes the option at start only: this process gets it from NODE_OPTIONS
// (tests/conftest.py sets it) and shows it to the kernel in process.execArgv, where jsii's entry point puts it.
"use strict";

const fs = require("fs");
const path = require("path");
const { Writable } = require("stream");

const PRESERVE_SYMLINKS = "--preserve-symlinks";
if (!process.execArgv.includes(PRESERVE_SYMLINKS)) {
  if (!(process.env.NODE_OPTIONS || "").split(/\s+/).includes(PRESERVE_SYMLINKS)) {
    throw new Error(`start the kernel with NODE_OPTIONS=${PRESERVE_SYMLINKS}, as jsii's entry point starts it`);
  }
  process.execArgv.push(PRESERVE_SYMLINKS);
}

// The one WebAssembly module a test kernel compiles is aws-cdk-lib's CloudFormation validation engine (8.9 MB, once
// per session, for the examples): compiled by V8's baseline compiler alone it takes about an eighth less CPU time than
// with the optimizing compiler recompiling it in the background, more than the faster code saves on one validation
// (NEURON_CONSTRUCTS_TEST_WASM_TIERS=default keeps V8's default, for benchmarks/harness_benchmark.py to compare).
if (process.env.NEURON_CONSTRUCTS_TEST_WASM_TIERS !== "default") {
  require("v8").setFlagsFromString("--liftoff-only");
}

const API = 3;
const readSync = fs.readSync;
const writeSync = fs.writeSync;

function emit(name, bytes) {
  writeSync(2, `${JSON.stringify({ [name]: bytes.toString("base64") })}\n`);
}

fs.readSync = function readApiFromStdin(fd, ...rest) {
  return readSync.call(this, fd === API ? 0 : fd, ...rest);
};
fs.writeSync = function writeApiToStdout(fd, data, ...rest) {
  if (fd === API) {
    return writeSync.call(this, 1, data, ...rest);
  }
  if (fd === 2) {
    const [offset = 0, length] = rest;
    const bytes = typeof data === "string" ? Buffer.from(data) : data.subarray(offset, length === undefined ? undefined : offset + length);
    emit("stderr", bytes);
    return bytes.length;
  }
  return writeSync.call(this, fd, data, ...rest);
};

function wrapped(name) {
  return new Writable({
    write(chunk, encoding, done) {
      emit(name, Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding));
      done();
    },
  });
}

for (const name of ["stdout", "stderr"]) {
  const stream = wrapped(name);
  Object.defineProperty(process, name, { configurable: true, enumerable: true, get: () => stream });
}

require(path.join(__dirname, "lib", "program.js"));
