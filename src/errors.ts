/**
 * User-facing errors. Each carries a stable code (the original's CLI error codes) so the CLI can map
 * it to an exit code and print a message without a stack trace.
 */

export type ErrorCode =
  | 'config_unknown_key' | 'config_type_error' | 'config_range_error' | 'config_required_key'
  | 'config_conflict' | 'config_unsupported' | 'invalid_imgsz'
  | 'source_not_found' | 'data_not_found' | 'data_invalid' | 'data_images_missing'
  | 'source_not_file' | 'source_too_large' | 'sources_failed'
  | 'model_not_found' | 'model_load_failed' | 'model_family_mismatch' | 'checkpoint_not_found'
  | 'unsafe_checkpoint' | 'model_metadata_invalid' | 'model_task_unsupported'
  | 'export_format_unknown' | 'export_dep_missing' | 'format_precision_unsupported' | 'quantize_failed'
  | 'video_unreadable' | 'stream_unavailable' | 'stream_timeout' | 'ffmpeg_missing'
  | 'device_not_available' | 'download_failed' | 'io_error' | 'output_path_invalid'
  | 'profile_argument_invalid' | 'profile_unreadable' | 'profile_not_produced';

const EXIT_CODES: Partial<Record<ErrorCode, number>> = {
  config_unknown_key: 2, config_type_error: 2, config_range_error: 2, config_required_key: 2,
  config_conflict: 2, config_unsupported: 2, invalid_imgsz: 2, output_path_invalid: 2,
  source_not_found: 3, data_not_found: 3, data_invalid: 3, data_images_missing: 3,
  source_not_file: 3, source_too_large: 3, sources_failed: 3,
  video_unreadable: 3, stream_unavailable: 3, stream_timeout: 3,
  model_not_found: 4, model_load_failed: 4, model_family_mismatch: 4, checkpoint_not_found: 4, unsafe_checkpoint: 4,
  model_metadata_invalid: 4, model_task_unsupported: 4,
  export_format_unknown: 5, export_dep_missing: 5, format_precision_unsupported: 5, quantize_failed: 5,
  // The profile group's own (the original's): 2 an argument that does not resolve, 1 a trace that
  // cannot be read, 3 no profile produced.
  profile_argument_invalid: 2, profile_unreadable: 1, profile_not_produced: 3,
};

export class LibreYOLOError extends Error {
  readonly code: ErrorCode;
  readonly suggestion: string | undefined;
  constructor(code: ErrorCode, message: string, options: { suggestion?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LibreYOLOError';
    this.code = code;
    this.suggestion = options.suggestion;
  }
  get exitCode(): number {
    return EXIT_CODES[this.code] ?? 1;
  }
}

export function exitCodeFor(code: ErrorCode): number {
  return EXIT_CODES[code] ?? 1;
}
