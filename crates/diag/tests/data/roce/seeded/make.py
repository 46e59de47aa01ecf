#!/usr/bin/env python3
"""Regenerate the seeded-misconfiguration corpus from examples/roce/clean.

Each case directory holds the clean switch config (config_db.json), NIC mlnx_qos
output (mlnx_qos.txt) and NIC sysfs dump (sysfs.txt) with ONE deliberate mistake,
plus `expected` listing the rule ids (one per line, as `severity rule`) the linter
must report - and nothing else. Run from this directory: python3 make.py
"""
import copy, json, os, shutil

CLEAN = os.path.join(os.path.dirname(__file__), "../../../../../../examples/roce/clean")
base = json.load(open(os.path.join(CLEAN, "config_db.json")))
qos = open(os.path.join(CLEAN, "mlnx_qos.txt")).read()
sysfs = open(os.path.join(CLEAN, "sysfs.txt")).read()
P = "Ethernet0,Ethernet4"

def case(name, expected, cfg=None, q=None, s=None, flat=False):
    d = name
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    c = cfg if cfg is not None else base
    if flat:
        c = {f"{t}|{k}": v for t, ents in c.items() for k, v in ents.items()}
    open(f"{d}/config_db.json", "w").write(json.dumps(c, indent=4) + "\n")
    open(f"{d}/mlnx_qos.txt", "w").write(q if q is not None else qos)
    open(f"{d}/sysfs.txt", "w").write(s if s is not None else sysfs)
    open(f"{d}/expected", "w").write("\n".join(expected) + "\n")

def mut(f):
    c = copy.deepcopy(base)
    f(c)
    return c

case("01-switch-pfc-off", ["error pfc-not-enabled"],
     mut(lambda c: c["PORT_QOS_MAP"][P].update(pfc_enable="", pfcwd_sw_enable="")))
case("02-nic-pfc-off", ["error pfc-not-enabled"],
     q=qos.replace("enabled     0   0   0   1", "enabled     0   0   0   0"))
case("03-nic-dscp-to-other-prio", ["error dscp-tc-mismatch"],
     q=qos.replace("prio:3 dscp:31,30,29,28,27,26,25,24,", "prio:3 dscp:31,30,29,28,27,25,24,")
          .replace("prio:4 dscp:39,38,37,36,35,34,33,32,", "prio:4 dscp:39,38,37,36,35,34,33,32,26,")
          .replace("enabled     0   0   0   1   0", "enabled     0   0   0   1   1")
          .replace("buffer      0   0   0   1   0", "buffer      0   0   0   1   1"),
     s=sysfs.replace("enable/4:0", "enable/4:1"))
case("04-ecn-above-pfc-trigger", ["error ecn-after-pfc"],
     mut(lambda c: c["WRED_PROFILE"]["AZURE_LOSSLESS"].update(green_min_threshold="7000000", green_max_threshold="9000000")))
case("05-headroom-short", ["error headroom-short"],
     mut(lambda c: c["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"].update(xoff="30720", size="50176")))
case("06-nic-mtu-above-switch", ["error mtu-mismatch"],
     s=sysfs.replace("/mtu:9000", "/mtu:9216"))
def wd_off(c):
    c["DEVICE_METADATA"]["localhost"]["default_pfcwd_status"] = "disable"
    c["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": "200"}}
case("07-pfc-watchdog-off", ["warning pfcwd-off"], mut(wd_off))
case("08-cnp-in-lossy-dwrr-queue", ["warning cnp-class"],
     mut(lambda c: c["QUEUE"][f"{P}|6"].update(scheduler="scheduler.0")))
case("09-lossy-tc-in-lossless-pg", ["error lossless-shared"],
     mut(lambda c: c["TC_TO_PRIORITY_GROUP_MAP"]["AZURE"].update({"1": "3"})))
case("10-dangling-wred-profile", ["error dangling-ref"],
     mut(lambda c: c["QUEUE"][f"{P}|3"].update(wred_profile="AZURE_LOSSLES")))
case("11-reference-to-wrong-table", ["error dangling-ref"],
     mut(lambda c: c["PORT_QOS_MAP"][P].update(dscp_to_tc_map="[TC_TO_QUEUE_MAP|AZURE]")))
case("12-dcqcn-np-off", ["error dcqcn-off"],
     s=sysfs.replace("roce_np/enable/3:1", "roce_np/enable/3:0"))
case("13-tos-not-ect", ["warning ecn-not-marking"],
     s=sysfs.replace("tclass=106", "tclass=104"))
case("14-cable-length-missing", ["error headroom-short"],
     mut(lambda c: c["CABLE_LENGTH"]["AZURE"].pop("Ethernet4")))
case("15-nic-trusts-pcp", ["warning dscp-tc-mismatch"],
     q="".join(l + "\n" for l in qos.splitlines() if not l.strip().startswith(("prio:", "dscp2prio")))
          .replace("trust state: dscp", "trust state: pcp"))
case("16-pfc-pauses-wrong-queue", ["error lossless-shared"],
     mut(lambda c: c["MAP_PFC_PRIORITY_TO_QUEUE"]["AZURE"].update({"3": "4"})))
case("17-wred-without-ecn", ["warning ecn-not-marking"],
     mut(lambda c: c["WRED_PROFILE"]["AZURE_LOSSLESS"].update(ecn="ecn_none")))
case("18-pfcwd-detection-out-of-range", ["error invalid-value"],
     mut(lambda c: c["PFC_WD"]["Ethernet0"].update(detection_time="50")))
case("19-flat-form-size-below-xon-plus-xoff", ["error headroom-short"],
     mut(lambda c: c["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"].update(size="40000")), flat=True)
case("20-switch-maps-rdma-dscp-to-lossy-tc", ["error pfc-not-enabled", "error dscp-tc-mismatch"],
     mut(lambda c: c["DSCP_TO_TC_MAP"]["AZURE"].update({"26": "1"})))
case("21-lossy-dscp-in-rdma-tc", ["error lossy-dscp-in-lossless-tc"],
     mut(lambda c: c["DSCP_TO_TC_MAP"]["AZURE"].update({"8": "3"})))
case("22-port-without-watchdog-entry-default-on", ["warning pfcwd-off"],
     mut(lambda c: c["PFC_WD"].pop("Ethernet4")))
