/**
 * Elementwise float32 kernels compiled to WebAssembly SIMD (four lanes per instruction) from a small
 * expression form, assembled here byte by byte (no toolchain, no binary in the tree).
 *
 * Every operation is one IEEE single-precision instruction (add, sub, mul, div, sqrt; never a fused
 * multiply-add), so a kernel gives bit for bit what a JavaScript loop gives when it rounds every op
 * with Math.fround: for these five operations, rounding the exact result to double and then to
 * float equals rounding it to float once (double carries more than 2 x 24 + 2 bits).
 *
 * A kernel reads and writes `arrays` float32 arrays of `chunk` elements that live at fixed places in
 * the module's memory (array k at byte k * chunk * 4), plus float32 scalars passed per call.
 * `ElementwiseKernels.run` copies slices of the caller's arrays in and out chunk by chunk.
 */

export type Lanes = { readonly k: 'load'; readonly array: number }
  | { readonly k: 'scalar'; readonly index: number }
  | { readonly k: 'local'; readonly slot: number }
  | { readonly k: 'bin'; readonly op: 'add' | 'sub' | 'mul' | 'div'; readonly a: Lanes; readonly b: Lanes }
  | { readonly k: 'sqrt'; readonly a: Lanes };

type Statement = { k: 'let'; slot: number; value: Lanes } | { k: 'store'; array: number; value: Lanes };

/** What a kernel body is written with: `load` an array's lanes, the ops, `let` to reuse a value, `store`. */
export class KernelBody {
  readonly statements: Statement[] = [];
  locals = 0;
  load(array: number): Lanes { return { k: 'load', array }; }
  scalar(index: number): Lanes { return { k: 'scalar', index }; }
  add(a: Lanes, b: Lanes): Lanes { return { k: 'bin', op: 'add', a, b }; }
  sub(a: Lanes, b: Lanes): Lanes { return { k: 'bin', op: 'sub', a, b }; }
  mul(a: Lanes, b: Lanes): Lanes { return { k: 'bin', op: 'mul', a, b }; }
  div(a: Lanes, b: Lanes): Lanes { return { k: 'bin', op: 'div', a, b }; }
  sqrt(a: Lanes): Lanes { return { k: 'sqrt', a }; }
  /** Computes `value` once into a local; the result reads it. */
  let(value: Lanes): Lanes {
    const slot = this.locals++;
    this.statements.push({ k: 'let', slot, value });
    return { k: 'local', slot };
  }
  store(array: number, value: Lanes): void {
    this.statements.push({ k: 'store', array, value });
  }
}

export interface KernelSpec {
  /** Float32 scalars the kernel takes per call (lanes `scalar(0)` ...). */
  scalars: number;
  body: (b: KernelBody) => void;
}

// --- binary encoding (WebAssembly core spec, section 5, and the SIMD proposal's opcodes) ---
const I32 = 0x7f, F32 = 0x7d, V128 = 0x7b;
const OP = { block: 0x02, loop: 0x03, br: 0x0c, brIf: 0x0d, end: 0x0b, localGet: 0x20, localSet: 0x21, i32Const: 0x41, i32GeU: 0x4f, i32Add: 0x6a } as const;
const SIMD = 0xfd;
const SIMD_OP = { load: 0x00, store: 0x0b, f32x4Splat: 0x13, sqrt: 0xe3, add: 0xe4, sub: 0xe5, mul: 0xe6, div: 0xe7 } as const;

function u32(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

function i32(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(byte & 0x40)) || (n === -1 && byte & 0x40)) return [...out, byte];
    out.push(byte | 0x80);
  }
}

const vec = (items: number[][]): number[] => [...u32(items.length), ...items.flat()];
const name = (s: string): number[] => vec([...new TextEncoder().encode(s)].map((c) => [c]));
const section = (id: number, body: number[]): number[] => [id, ...u32(body.length), ...body];
const simd = (op: number, ...imm: number[]): number[] => [SIMD, ...u32(op), ...imm];

/**
 * One function: params (i32 byte count, f32 scalars...), locals (i32 index, v128 splats, v128
 * temporaries); loops over the lanes 16 bytes at a time.
 */
function functionBody(spec: KernelSpec, chunkBytes: number): number[] {
  const b = new KernelBody();
  spec.body(b);
  const nParam = 0;
  const scalarParam = (k: number) => 1 + k;
  const index = 1 + spec.scalars;
  const splat = (k: number) => index + 1 + k;
  const temp = (slot: number) => index + 1 + spec.scalars + slot;
  const memarg = (array: number) => [...u32(4), ...u32(array * chunkBytes)];

  const expr = (e: Lanes): number[] => {
    switch (e.k) {
      case 'load': return [OP.localGet, ...u32(index), ...simd(SIMD_OP.load, ...memarg(e.array))];
      case 'scalar': return [OP.localGet, ...u32(splat(e.index))];
      case 'local': return [OP.localGet, ...u32(temp(e.slot))];
      case 'sqrt': return [...expr(e.a), ...simd(SIMD_OP.sqrt)];
      case 'bin': return [...expr(e.a), ...expr(e.b), ...simd(SIMD_OP[e.op])];
    }
  };
  const code: number[] = [];
  for (let k = 0; k < spec.scalars; k++) code.push(OP.localGet, ...u32(scalarParam(k)), ...simd(SIMD_OP.f32x4Splat), OP.localSet, ...u32(splat(k)));
  code.push(OP.i32Const, ...i32(0), OP.localSet, ...u32(index));
  code.push(OP.block, 0x40, OP.loop, 0x40);
  code.push(OP.localGet, ...u32(index), OP.localGet, ...u32(nParam), OP.i32GeU, OP.brIf, ...u32(1));
  for (const s of b.statements) {
    if (s.k === 'let') code.push(...expr(s.value), OP.localSet, ...u32(temp(s.slot)));
    else code.push(OP.localGet, ...u32(index), ...expr(s.value), ...simd(SIMD_OP.store, ...memarg(s.array)));
  }
  code.push(OP.localGet, ...u32(index), OP.i32Const, ...i32(16), OP.i32Add, OP.localSet, ...u32(index), OP.br, ...u32(0));
  code.push(OP.end, OP.end, OP.end);
  const locals = vec([[...u32(1), I32], [...u32(spec.scalars + b.locals), V128]]);
  const fn = [...locals, ...code];
  return [...u32(fn.length), ...fn];
}

/** The module's bytes: one memory (exported as `memory`) and one exported function per kernel. */
export function assembleKernels(kernels: Record<string, KernelSpec>, arrays: number, chunk: number): Uint8Array {
  const names = Object.keys(kernels);
  const chunkBytes = chunk * 4;
  const pages = Math.ceil((arrays * chunkBytes) / 65536);
  const types = names.map((n) => [0x60, ...vec([[I32], ...Array.from({ length: kernels[n]!.scalars }, () => [F32])]), ...vec([])]);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec(types)),
    ...section(3, vec(names.map((_, k) => u32(k)))),
    ...section(5, vec([[0x00, ...u32(pages)]])),
    ...section(7, vec([[...name('memory'), 0x02, ...u32(0)], ...names.map((n, k) => [...name(n), 0x00, ...u32(k)])])),
    ...section(10, vec(names.map((n) => functionBody(kernels[n]!, chunkBytes)))),
  ]);
}

/** The part of the WebAssembly JS API used here (this project's `lib` settings do not declare it). */
interface WebAssemblyApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly?: WebAssemblyApi }).WebAssembly;

type KernelFn = (bytes: number, ...scalars: number[]) => void;

/** Compiled kernels over `arrays` chunk-sized float32 slots, and the loop that streams arrays through them. */
export class ElementwiseKernels<K extends string> {
  private readonly fns: Record<K, KernelFn>;
  private readonly memory: Float32Array;

  constructor(kernels: Record<K, KernelSpec>, readonly arrays: number, readonly chunk = 16384) {
    if (!wasm) throw new Error('this JavaScript runtime has no WebAssembly');
    const instance = new wasm.Instance(new wasm.Module(assembleKernels(kernels, arrays, chunk)));
    this.fns = instance.exports as unknown as Record<K, KernelFn>;
    this.memory = new Float32Array((instance.exports.memory as { buffer: ArrayBuffer }).buffer);
  }

  /**
   * Runs `kernel` over `inputs` (array slot k is `inputs[k]`, all of one length; a missing slot is
   * left as it is), then copies slots `outputs` back into the same arrays.
   */
  run(kernel: K, inputs: ReadonlyArray<Float32Array | null>, outputs: readonly number[], scalars: readonly number[]): void {
    const n = inputs.find((a) => a)?.length ?? 0;
    const fn = this.fns[kernel];
    const mem = this.memory;
    const C = this.chunk;
    for (let off = 0; off < n; off += C) {
      const len = Math.min(C, n - off);
      for (let k = 0; k < inputs.length; k++) {
        const a = inputs[k];
        if (a) mem.set(a.subarray(off, off + len), k * C);
      }
      // Whole lanes: the pad lanes past `len` compute on stale values and are never copied out.
      fn(Math.ceil(len / 4) * 16, ...scalars);
      for (const k of outputs) inputs[k]!.set(mem.subarray(k * C, k * C + len), off);
    }
  }
}
