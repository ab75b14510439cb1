#!/usr/bin/python3
"""Writes the libFuzzer dictionaries of tests/fuzz/dict/ (one per target):
JSON tokens and every short string of the target's seed corpus, the action
kinds and units of the small languages, and the flags each tool's --help
lists. Run from the repository root with a built tree:
    tests/fuzz/make_dictionaries.py build-no-cuda
"""
import glob
import re
import subprocess
import sys

CORPUS = 'tests/fuzz/corpus/'
DICT = 'tests/fuzz/dict/'
JSON_TOKENS = ['{', '}', '[', ']', ':', ',', '"', 'true', 'false', 'null', '1e400', '-1', '0.5', '1e16',
               '9223372036854775807', 'NaN']


def quoted(token):
    """A dictionary entry: printable ASCII as is, the rest as \\xAB."""
    out = ''
    for byte in token.encode():
        ch = chr(byte)
        out += '\\' + ch if ch in '\\"' else ch if 32 <= byte < 127 else f'\\x{byte:02X}'
    return f'"{out}"'


def write(target, header, tokens):
    unique = list(dict.fromkeys(tokens))
    with open(DICT + target + '.dict', 'w') as f:
        f.write(f'# {header}\n')
        f.writelines(quoted(t) + '\n' for t in unique)


def corpus_strings(target):
    out = []
    for path in sorted(glob.glob(CORPUS + target + '/*')):
        for s in re.findall(r'"((?:[^"\\]|\\.)*)"', open(path).read()):
            if len(s) <= 24:
                out += [s, f'"{s}"']
    return out


def help_flags(binary, subcommands):
    out = []
    for sub in [''] + subcommands:
        text = subprocess.run([binary] + ([sub] if sub else []) + ['--help'], capture_output=True,
                              text=True).stdout
        out += re.findall(r'(--[a-z][a-z0-9-]*)', text) + re.findall(r'(?<![-\w])(-[A-Za-z])\b', text)
    return out


def main(build):
    for target, what in [('schedule_json_fuzz', 'schedule IR JSON (docs/design.md "Schedule IR")'),
                         ('profile_fuzz', 'profile JSON (docs/design.md "Profile format")'),
                         ('trace_fuzz', 'Chrome trace JSON (docs/design.md "Trace format")'),
                         ('torch_trace_fuzz', 'PyTorch profiler traces (Kineto JSON, docs/torch.md)')]:
        write(target, f'{what}: JSON tokens, and the strings of the seed corpus',
              JSON_TOKENS + corpus_strings(target))
    kinds = ['F', 'B', 'I', 'W', 'SEND_F', 'RECV_F', 'SEND_B', 'RECV_B', 'STEP', 'UNSHARD', 'RESHARD',
             'REDUCE_GRAD', 'OVERLAP_F_B']
    write('schedule_csv_fuzz', 'torch CSV schedules: separators and action kinds',
          [',', '\n', '\r\n', '(', ')', ';', '0', '1', '99999999999'] + kinds)
    write('model_spec_fuzz', 'model specs (--model)',
          ['mlp:', 'transformer:', 'unbalanced:', 'layers=', 'hidden=', 'heads=', 'seq=', 'vocab=', ',', '=',
           '1048576', '16384', '0'])
    write('flag_values_fuzz', 'flag values: lists, byte sizes, partitions, faults, actions',
          ['..', ',', 'GB', 'GiB', 'MB', 'MiB', 'TB', 'TiB', 'KB', 'B', 'e9', 'balanced', 'uniform', ':fail',
           ':stall', ':oom', '(', ';', ')', '2147483648'] + kinds)
    write('partition_fuzz', 'partition specs', ['balanced', 'uniform', ',', '\n', '2147483647'])
    # '\n\n' is an empty argument (--trace '', FILE ''), which every path flag refuses.
    sim_commands = ['schedule', 'check', 'run', 'sweep', 'diff', 'profile']
    write('gpipe_sim_argv_fuzz', 'gpipe-sim argv, one argument per line: commands, flags, values, scratch files',
          ['\n', '\n\n'] + sim_commands + help_flags(f'{build}/bin/gpipe-sim', sim_commands) +
          ['s.json', 's.csv', 'p.json', 't.json', 'o.json', 'gpipe', '1f1b', 'zbv', 'dualpipev', 'zb-auto',
           'zb-h1', 'interleaved-1f1b', 'never', 'always', 'except_last', 'json', 'csv', 'grid', 'h100', 'fifo', 'shared',
           'mlp:layers=4,hidden=8', '8GB'])
    run_commands = ['train', 'profile', 'validate']
    write('gpipe_run_argv_fuzz', 'gpipe-run argv, one argument per line: commands, flags, values, scratch files',
          ['\n', '\n\n'] + run_commands + help_flags(f'{build}/bin/gpipe-run', run_commands) +
          ['s.json', 'p.json', 'o.json', 'cpu', 'gpipe', '1f1b', 'zbv', 'never', 'always', 'adamw', 'sgd',
           'mlp:layers=4,hidden=8', 'transformer:layers=2,hidden=8,heads=2,seq=4', ':fail', ':stall', ':oom'])


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'build')
