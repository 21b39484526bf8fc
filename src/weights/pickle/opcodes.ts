/** Opcode tables of the reader: which opcodes allocate, which valid ones are refused, size caps. */

/**
 * Opcodes that allocate a JS object (container, string, bytes, bigint, call result, mark frame).
 * A pickle is a program: two bytes (EMPTY_LIST, APPEND) make a list, so a few MB can ask for
 * gigabytes of small objects; these are counted against the pickleObjects limit.
 */
export const ALLOCATES = new Uint8Array(256);
for (const op of [0x7d, 0x5d, 0x29, 0x8f, 0x74, 0x6c, 0x85, 0x86, 0x87, 0x91, 0x64, 0x58, 0x8d, 0x8c, 0x54, 0x55, 0x42, 0x43, 0x8e,
  0x96, 0x8a, 0x8b, 0x4c, 0x52, 0x81, 0x92, 0x51, 0x28]) ALLOCATES[op] = 1;

/** Longest LONG1/LONG4 integer accepted, in bytes (LONG1 is at most 255 anyway). */
export const MAX_LONG_BYTES = 4096;

/** Valid pickle opcodes this reader refuses, named for the message. */
export const UNSUPPORTED_OPCODES: Record<number, string> = {
  0x53: "protocol-0 STRING ('S')", 0x56: "protocol-0 UNICODE ('V')", 0x50: "protocol-0 PERSID ('P')",
  0x69: "INST ('i')", 0x6f: "OBJ ('o')", 0x82: 'EXT1', 0x83: 'EXT2', 0x84: 'EXT4',
  0x97: 'NEXT_BUFFER (out-of-band buffers)', 0x98: 'READONLY_BUFFER (out-of-band buffers)',
};
