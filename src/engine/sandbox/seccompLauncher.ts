// The seccomp filter without bwrap (the weak fallback isolation, on Linux):
// a few lines of Python (python3 is on every host that runs tasks here; its
// ctypes reaches prctl) set no_new_privs, install the filter given in hex
// as an argument and exec the candidate's command, which keeps the filter
// and every process it starts. bwrap does the same with `--seccomp FD`.
// Like bwrap's copy-out wrapper, it says on a descriptor that the candidate
// started: S once the filter is in place, E after S when the command could
// not be started; the descriptor closes on exec, so the candidate never has
// it. No S (a setup before it failed) or an E is ours, never the model's.
import { spawnSync } from 'node:child_process';
import { errorMessage } from '../common/errors';
import { type SeccompArch, seccompFilterBytes } from './seccomp';

/** Exit status of the launcher when the filter could not be installed or the command not started (never the candidate's). */
export const SECCOMP_LAUNCHER_FAILED = 126;
/** The descriptor the launcher reports on (runProcess's capture). */
export const LAUNCHER_STARTED_FD = 3;
/** What the descriptor carries when the candidate's command was started under the filter. */
export const LAUNCHER_STARTED = 'S';

// PR_SET_NO_NEW_PRIVS = 38; PR_SET_SECCOMP = 22 with SECCOMP_MODE_FILTER = 2 and a struct sock_fprog { unsigned short len; struct sock_filter *filter; }.
const LAUNCHER_SCRIPT = [
  'import ctypes, os, sys',
  'f = bytes.fromhex(sys.argv[1])',
  'report = int(sys.argv[2])',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'class Prog(ctypes.Structure):',
  "    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_char_p)]",
  'prog = Prog(len(f) // 8, f)',
  'if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:',
  "    sys.stderr.write('thetaevolve: the seccomp filter could not be installed: ' + os.strerror(ctypes.get_errno()) + '\\n')",
  `    os._exit(${SECCOMP_LAUNCHER_FAILED})`,
  'if report >= 0:',
  '    os.set_inheritable(report, False)',
  `    os.write(report, b'${LAUNCHER_STARTED}')`,
  'try:',
  '    os.execv(sys.argv[3], sys.argv[3:])',
  'except OSError as e:',
  '    if report >= 0:',
  "        os.write(report, b'E')",
  "    sys.stderr.write('thetaevolve: cannot start ' + sys.argv[3] + ': ' + str(e) + '\\n')",
  `    os._exit(${SECCOMP_LAUNCHER_FAILED})`,
].join('\n');

/**
 * `command` started under the filter: python3 -I -S (no site, no user
 * paths, no current folder) runs the launcher; with reportFd, it reports
 * there (LAUNCHER_STARTED).
 */
export function seccompLauncherCommand(
  python: string,
  filter: Buffer,
  command: readonly string[],
  reportFd: number | null = null,
): string[] {
  return [python, '-I', '-S', '-c', LAUNCHER_SCRIPT, filter.toString('hex'), String(reportFd ?? -1), ...command];
}

/** Whether the launcher works here (a filter installed, a denied call refused, the command run); null when it does, else why not. */
export function probeSeccompLauncher(python: string, arch: SeccompArch): string | null {
  try {
    // unshare(CLONE_NEWUSER) is denied by the filter: the probe exits 0 only when it was refused.
    const check = 'import ctypes, sys\nsys.exit(0 if ctypes.CDLL(None).unshare(0x10000000) != 0 else 3)';
    const command = seccompLauncherCommand(python, seccompFilterBytes(arch), [python, '-I', '-S', '-c', check]);
    const result = spawnSync(command[0] as string, command.slice(1), { cwd: '/', env: {}, encoding: 'utf8', timeout: 15000 });
    if (result.error) return result.error.message;
    if (result.status === 0) return null;
    if (result.status === 3) return 'the filter was installed but did not refuse a denied call';
    return result.stderr.trim().split('\n')[0] || `exit status ${String(result.status ?? result.signal)}`;
  } catch (err) {
    return errorMessage(err);
  }
}
