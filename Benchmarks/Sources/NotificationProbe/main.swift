// Delivers N notifications through the real client stack with no benchmark harness, so that
// valgrind can count heap allocations (memcheck) and instructions (cachegrind) from outside:
//
//   NotificationProbe list                             every benchmark name
//   NotificationProbe check                            sets up every case, delivers 1,000 each,
//                                                      checks every one became a reading (exit 1 if not)
//   NotificationProbe notification/cc2650/movement N   set up, then N notifications
//   NotificationProbe loop/idle-turn N                 set up (cc2650/movement), then N idle loop turns
//   NotificationProbe control/short-notification N     set up (cc2650/movement), then N notifications
//                                                      one byte short: decode errors, which allocate
//
// The difference between two runs with different N, divided by the difference in N, is the cost
// of one notification: process start-up and the whole connection setup cancel out.

import NotificationRig

#if canImport(Glibc)
import Glibc
#endif

func rig(_ c: NotificationCase) -> NotificationRig {
    do {
        return try NotificationRig(c)
    } catch {
        print("setup failed: \(error)")
        exit(1)
    }
}

@inline(never)
func deliver(_ rig: NotificationRig, _ n: Int) {
    for _ in 0 ..< n { rig.deliver() }
}

@inline(never)
func deliverShort(_ rig: NotificationRig, _ n: Int) {
    for _ in 0 ..< n { rig.deliverShort() }
}

@inline(never)
func idle(_ rig: NotificationRig, _ n: Int) {
    for _ in 0 ..< n { rig.loop.runOnce(maxWait: .zero) }
}

let args = CommandLine.arguments
switch args.count > 1 ? args[1] : "" {
case "list":
    for c in notificationCases { print(c.name) }
    print("loop/idle-turn")
    print("control/short-notification")
case "check":
    var failed = 0
    for c in notificationCases {
        let r = rig(c)
        deliver(r, 1_000)
        if let problem = r.problems() {
            print(problem)
            failed += 1
        } else {
            print("\(c.name): handle 0x\(String(r.dataHandle, radix: 16)), \(r.pdu.count)-byte PDU "
                + r.pdu.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
                + ", 1000 notifications → \(r.delivered) readings")
        }
        r.close()
    }
    exit(failed == 0 ? 0 : 1)
case let name where !name.isEmpty && args.count == 3:
    guard let n = Int(args[2]), n >= 0 else { print("N must be a non-negative integer"); exit(2) }
    if name == "loop/idle-turn" {
        let r = rig(notificationCases[0])
        idle(r, n)
        guard r.delivered == 0 else { print("loop/idle-turn: \(r.delivered) readings out of nowhere"); exit(1) }
        print(r.loop.wakeups)
        exit(0)
    }
    if name == "control/short-notification" {
        let r = rig(notificationCases[0])
        let before = r.decodeErrors
        deliverShort(r, n)
        guard r.decodeErrors - before == UInt64(n), r.delivered == 0 else {
            print("control/short-notification: \(r.decodeErrors - before) decode errors and \(r.delivered) readings for \(n) short notifications")
            exit(1)
        }
        print(r.decodeErrors - before)
        exit(0)
    }
    guard let c = notificationCases.first(where: { $0.name == name }) else {
        print("unknown benchmark \(name); try 'list'")
        exit(2)
    }
    let r = rig(c)
    deliver(r, n)
    // A probe that silently stopped decoding would count nothing and look free.
    if let problem = r.problems() {
        print(problem)
        exit(1)
    }
    print(r.delivered)
default:
    print("usage: NotificationProbe list | check | <benchmark name> <N> | loop/idle-turn <N> | control/short-notification <N>")
    exit(2)
}
