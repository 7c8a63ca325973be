-- SPDX-License-Identifier: BSD-2-Clause
-- mrc.lua: Wireshark / tshark dissector for MRC (Multipath Reliable
-- Connection) over UDP, as OpenMRC puts it on the wire.
--
-- Decodes BTH and every MRC header after it (METH, TSETH, RETH, ImmDt, AETH,
-- SETH + CC_STATE, NETH, PETH, ERTH, EETH, and the SECETH of OpenMRC secure
-- QPs) with the layouts of
-- src/wire/headers.hpp, the opcode table of src/wire/packet.cc, the pad and
-- the ICRC. Field names are mrc.<header>.<field> (docs/wireshark.md lists
-- them).
--
-- Port 4791 is also RoCEv2's. This dissector takes the UDP port (preference
-- "mrc.udp_port", default 4791) from the dissector that held it (Wireshark's
-- InfiniBand RoCEv2 dissector) and hands that dissector every packet whose
-- opcode is not an MRC one (RoCEv2 RC traffic, such as OpenMRC's RoCE
-- baseline), unless the preference "mrc.decode_rc" asks to decode those here.
-- It is also available in Decode As (UDP port -> MRC) and as a heuristic
-- dissector on UDP ("mrc_udp", for MRC on other ports; it accepts only a
-- packet with an MRC opcode, TVer 0 and P_Key 0xFFFF whose header chain fits).
--
-- Usage: tshark -X lua_script:tools/wireshark/mrc.lua -r capture.pcap -Y mrc
-- Written for Wireshark 4.0 (Debian 12) and Lua 5.2; no other dependency.

local mrc = Proto("mrc", "Multipath Reliable Connection")

-------------------------------------------------------------------------------
-- Value strings

local opcode_names = {
  [0xC6] = "WRITE_FIRST", [0xC7] = "WRITE_MIDDLE", [0xC8] = "WRITE_LAST",
  [0xC9] = "WRITE_LAST_WITH_IMM", [0xCA] = "WRITE_ONLY", [0xCB] = "WRITE_ONLY_WITH_IMM",
  [0xD1] = "ACKNOWLEDGE", [0xD8] = "ENDPOINT_REQUEST", [0xD9] = "ENDPOINT_RESPONSE",
  [0xDC] = "RELIABILITY_SACK", [0xDD] = "RELIABILITY_NACK", [0xDE] = "RELIABILITY_PROBE",
  [0x06] = "RC_RDMA_WRITE_FIRST", [0x07] = "RC_RDMA_WRITE_MIDDLE", [0x08] = "RC_RDMA_WRITE_LAST",
  [0x09] = "RC_RDMA_WRITE_LAST_WITH_IMM", [0x0A] = "RC_RDMA_WRITE_ONLY",
  [0x0B] = "RC_RDMA_WRITE_ONLY_WITH_IMM", [0x11] = "RC_ACKNOWLEDGE", [0x81] = "CNP",
}

local nack_names = {
  [0x01] = "TRIMMED", [0x02] = "TRIMMED_LASTHOP", [0x06] = "NO_BITMAP", [0x07] = "NO_PKT_BUFFER",
  [0x0A] = "NO_RESOURCE", [0x0B] = "PSN_OOR_WINDOW", [0x19] = "UNEXP_EVENT",
}

local mark_names = { [0] = "NONE", [1] = "SKIP_ONCE", [2] = "ALWAYS_SKIP", [3] = "reserved" }
local ep_op_names = { [0] = "PORT_STATUS_UPDATE", [1] = "EV_PROBE" }
local syndrome_names = {
  [0x1F] = "ACK (no credit)", [0x60] = "NAK: PSN sequence error", [0x61] = "NAK: invalid request",
  [0x62] = "NAK: remote access error", [0x63] = "NAK: remote operational error",
}

-- What follows BTH, per opcode: ext = extension header for control packets;
-- data packets: meth (METH, and TSETH if BTH.ts), reth, imm.
local opcodes = {
  [0xC6] = { data = true, meth = true, reth = true },
  [0xC7] = { data = true, meth = true, reth = true },
  [0xC8] = { data = true, meth = true, reth = true },
  [0xC9] = { data = true, meth = true, reth = true, imm = true },
  [0xCA] = { data = true, meth = true, reth = true },
  [0xCB] = { data = true, meth = true, reth = true, imm = true },
  [0xD1] = { ext = "aeth" },
  [0xD8] = { ext = "erth" },
  [0xD9] = { ext = "eeth" },
  [0xDC] = { ext = "seth" },
  [0xDD] = { ext = "neth" },
  [0xDE] = { ext = "peth" },
  [0x06] = { data = true, reth = true, rc = true },
  [0x07] = { data = true, rc = true },
  [0x08] = { data = true, rc = true },
  [0x09] = { data = true, imm = true, rc = true },
  [0x0A] = { data = true, reth = true, rc = true },
  [0x0B] = { data = true, reth = true, imm = true, rc = true },
  [0x11] = { ext = "aeth", rc = true },
  [0x81] = { ext = "cnp", rc = true },
}

local ext_sizes = { aeth = 4, seth = 36, neth = 20, peth = 16, erth = 16, eeth = 36, cnp = 16 }
local ICRC_BYTES = 4
local BTH_BYTES = 12
local SECETH_BYTES = 24

-------------------------------------------------------------------------------
-- Fields

local F = {}
local function field(key, f) F[key] = f end

-- BTH
field("opcode", ProtoField.uint8("mrc.bth.opcode", "Opcode", base.HEX, opcode_names))
field("se", ProtoField.bool("mrc.bth.se", "Solicited event", 8, nil, 0x80))
field("migreq", ProtoField.bool("mrc.bth.migreq", "MigReq", 8, nil, 0x40))
field("pad", ProtoField.uint8("mrc.bth.pad", "Pad count", base.DEC, nil, 0x30))
field("tver", ProtoField.uint8("mrc.bth.tver", "Transport version", base.DEC, nil, 0x0F))
field("pkey", ProtoField.uint16("mrc.bth.pkey", "P_Key", base.HEX))
field("resv8a", ProtoField.uint8("mrc.bth.resv8a", "Reserved (FECN/BECN)", base.HEX))
field("dqpn", ProtoField.uint24("mrc.bth.dqpn", "Destination QP", base.HEX))
field("ackreq", ProtoField.bool("mrc.bth.ackreq", "A (ack request)", 8, nil, 0x80))
field("rtx", ProtoField.bool("mrc.bth.rtx", "rtx (retransmission)", 8, nil, 0x20))
field("ts", ProtoField.bool("mrc.bth.ts", "ts (TSETH present)", 8, nil, 0x10))
field("sec", ProtoField.bool("mrc.bth.sec", "sec (SECETH present: OpenMRC secure QP)", 8, nil, 0x08))
-- SECETH (OpenMRC secure QPs, docs/security.md): key id, E, counter, GCM tag.
field("sec_keyid", ProtoField.uint8("mrc.seceth.key_id", "Key id", base.DEC))
field("sec_enc", ProtoField.bool("mrc.seceth.encrypted", "E (payload encrypted)", 8, nil, 0x80))
field("sec_counter", ProtoField.uint64("mrc.seceth.counter", "Transmission counter", base.DEC))
field("sec_tag", ProtoField.bytes("mrc.seceth.tag", "AES-GCM tag (not verified)"))
field("psn", ProtoField.uint24("mrc.bth.psn", "PSN", base.DEC))
-- METH
field("rqmsn", ProtoField.uint16("mrc.meth.rqmsn", "RQMSN", base.DEC))
field("msn", ProtoField.uint16("mrc.meth.msn", "MSN", base.DEC))
-- TSETH
field("tseth_ts", ProtoField.uint16("mrc.tseth.timestamp", "Transmit timestamp", base.DEC))
field("tseth_alt", ProtoField.bool("mrc.tseth.alt_resolution", "Implementation-defined resolution", 16, nil, 0x8000))
field("tseth_fmt", ProtoField.uint16("mrc.tseth.format", "Format", base.DEC, nil, 0x000F))
-- RETH
field("va", ProtoField.uint64("mrc.reth.va", "Virtual address", base.HEX))
field("rkey", ProtoField.uint32("mrc.reth.rkey", "R_Key", base.HEX))
field("dmalen", ProtoField.uint32("mrc.reth.len", "DMA length", base.DEC))
-- ImmDt
field("imm", ProtoField.uint32("mrc.immdt", "Immediate data", base.HEX))
-- AETH
field("syndrome", ProtoField.uint8("mrc.aeth.syndrome", "Syndrome", base.HEX, syndrome_names))
field("aeth_msn", ProtoField.uint24("mrc.aeth.msn", "MSN", base.DEC))
-- SETH
field("sack_type", ProtoField.uint16("mrc.sack.type", "Type", base.DEC, nil, 0xF000))
field("sack_nh", ProtoField.uint16("mrc.sack.next_header", "Next header", base.DEC, nil, 0x0F80))
field("sack_mark", ProtoField.uint16("mrc.sack.mark", "M (path verdict)", base.DEC, mark_names, 0x0060))
field("sack_pr", ProtoField.bool("mrc.sack.pr", "PR (probe response)", 16, nil, 0x0002))
field("sack_ackoff", ProtoField.int16("mrc.sack.ack_psn_offset", "ACK PSN offset", base.DEC))
field("sack_ev", ProtoField.uint32("mrc.sack.entropy", "Reflected entropy (EV)", base.DEC))
field("sack_src", ProtoField.uint16("mrc.sack.src_conn", "Source connection", base.HEX))
field("sack_dst", ProtoField.uint16("mrc.sack.dst_conn", "Destination connection", base.HEX))
field("sack_cack", ProtoField.uint24("mrc.sack.cack_psn", "Cumulative ACK PSN", base.DEC))
field("sack_cctype", ProtoField.uint8("mrc.sack.cc_type", "CC type", base.DEC, nil, 0xF0))
field("sack_ccflags", ProtoField.uint8("mrc.sack.cc_flags", "CC flags", base.HEX, nil, 0x0F))
field("sack_mpr", ProtoField.uint8("mrc.sack.mpr", "MPR (x128 PSNs)", base.DEC))
field("sack_off", ProtoField.int16("mrc.sack.sack_offset", "SACK offset", base.DEC))
field("sack_bitmap", ProtoField.uint64("mrc.sack.bitmap", "SACK bitmap", base.HEX))
field("sack_ackpsn", ProtoField.uint24("mrc.sack.ack_psn", "ACK PSN (triggering packet)", base.DEC))
field("sack_base", ProtoField.uint24("mrc.sack.base_psn", "Bitmap base PSN", base.DEC))
field("sack_psns", ProtoField.string("mrc.sack.sacked_psns", "PSNs the bitmap acknowledges"))
-- CC_STATE
field("cc_ts", ProtoField.uint16("mrc.ccstate.reflected_ts", "Reflected timestamp", base.DEC))
field("cc_ooo", ProtoField.uint16("mrc.ccstate.ooo_count", "Out-of-order count", base.DEC, nil, 0x7FFF))
field("cc_rc", ProtoField.bool("mrc.ccstate.rc", "rc (restore cwnd)", 8, nil, 0x80))
field("cc_pen", ProtoField.uint8("mrc.ccstate.rcv_cwnd_pen", "Receiver cwnd penalty", base.DEC, nil, 0x7F))
field("cc_rcvd", ProtoField.uint24("mrc.ccstate.rcvd_bytes", "Received bytes (x256)", base.DEC))
-- NETH
field("nack_type", ProtoField.uint16("mrc.nack.type", "Type", base.DEC, nil, 0xF000))
field("nack_nh", ProtoField.uint16("mrc.nack.next_header", "Next header", base.DEC, nil, 0x0F80))
field("nack_code", ProtoField.uint8("mrc.nack.code", "NACK reason", base.HEX, nack_names))
field("nack_vendor", ProtoField.uint8("mrc.nack.vendor", "Vendor info", base.HEX))
field("nack_ev", ProtoField.uint32("mrc.nack.entropy", "Reflected entropy (EV)", base.DEC))
field("nack_src", ProtoField.uint16("mrc.nack.src_conn", "Source connection", base.HEX))
field("nack_dst", ProtoField.uint16("mrc.nack.dst_conn", "Destination connection", base.HEX))
field("nack_psn", ProtoField.uint24("mrc.nack.psn", "NACK PSN", base.DEC))
field("nack_cctype", ProtoField.uint8("mrc.nack.cc_type", "CC type", base.DEC, nil, 0xF0))
field("nack_ccflags", ProtoField.uint8("mrc.nack.cc_flags", "CC flags", base.HEX, nil, 0x0F))
field("nack_ts", ProtoField.uint16("mrc.nack.reflected_ts", "Reflected timestamp", base.DEC))
-- PETH
field("probe_type", ProtoField.uint16("mrc.probe.type", "Type", base.DEC, nil, 0xF000))
field("probe_nh", ProtoField.uint16("mrc.probe.next_header", "Next header", base.DEC, nil, 0x0F80))
field("probe_vendor", ProtoField.uint8("mrc.probe.vendor", "Vendor info", base.HEX))
field("probe_id", ProtoField.uint16("mrc.probe.id", "Probe ID", base.DEC))
field("probe_src", ProtoField.uint16("mrc.probe.src_conn", "Source connection", base.HEX))
field("probe_dst", ProtoField.uint16("mrc.probe.dst_conn", "Destination connection", base.HEX))
field("probe_ts", ProtoField.uint16("mrc.probe.timestamp", "Transmit timestamp", base.DEC))
field("probe_alt", ProtoField.bool("mrc.probe.alt_resolution", "Implementation-defined resolution", 16, nil, 0x8000))
field("probe_fmt", ProtoField.uint16("mrc.probe.format", "Format", base.DEC, nil, 0x000F))
-- ERTH
field("epreq_type", ProtoField.uint16("mrc.epreq.type", "Type", base.DEC, nil, 0xF000))
field("epreq_nh", ProtoField.uint16("mrc.epreq.next_header", "Next header", base.DEC, nil, 0x0F80))
field("epreq_op", ProtoField.uint16("mrc.epreq.op", "Operation", base.DEC, ep_op_names, 0x0003))
field("epreq_vendor", ProtoField.uint8("mrc.epreq.vendor", "Vendor info", base.HEX))
field("epreq_mask", ProtoField.uint32("mrc.epreq.port_status_mask", "Port status mask", base.HEX))
field("epreq_ts", ProtoField.uint16("mrc.epreq.timestamp", "Transmit timestamp", base.DEC))
field("epreq_alt", ProtoField.bool("mrc.epreq.alt_resolution", "Implementation-defined resolution", 16, nil, 0x8000))
field("epreq_fmt", ProtoField.uint16("mrc.epreq.format", "Format", base.DEC, nil, 0x000F))
-- EETH
field("epresp_type", ProtoField.uint16("mrc.epresp.type", "Type", base.DEC, nil, 0xF000))
field("epresp_nh", ProtoField.uint16("mrc.epresp.next_header", "Next header", base.DEC, nil, 0x0F80))
field("epresp_op", ProtoField.uint16("mrc.epresp.op", "Operation", base.DEC, ep_op_names, 0x0030))
field("epresp_vendor", ProtoField.uint8("mrc.epresp.vendor", "Vendor info", base.HEX))
field("epresp_ev", ProtoField.uint32("mrc.epresp.entropy", "Reflected entropy (EV)", base.DEC))
field("epresp_port", ProtoField.uint8("mrc.epresp.rx_port", "Receiving port", base.DEC))
field("epresp_svc", ProtoField.bool("mrc.epresp.svc_time_adjusted", "Service time included", 8, nil, 0x80))
field("epresp_ts", ProtoField.uint16("mrc.epresp.reflected_ts", "Reflected timestamp", base.DEC))
-- The rest
field("cnp", ProtoField.bytes("mrc.cnp.reserved", "CNP reserved"))
field("ev", ProtoField.uint32("mrc.ev", "Entropy value (UDP source port)", base.DEC))
field("payload", ProtoField.bytes("mrc.payload", "Payload"))
field("payload_len", ProtoField.uint32("mrc.payload_len", "Payload length", base.DEC))
field("padding", ProtoField.bytes("mrc.padding", "Pad"))
field("icrc", ProtoField.uint32("mrc.icrc", "ICRC (not verified)", base.HEX))

local hf_list = {}
for _, f in pairs(F) do hf_list[#hf_list + 1] = f end
mrc.fields = hf_list

local ef_truncated = ProtoExpert.new("mrc.truncated", "MRC header truncated",
  expert.group.MALFORMED, expert.severity.ERROR)
local ef_unknown_opcode = ProtoExpert.new("mrc.unknown_opcode", "Opcode is neither MRC nor RoCEv2 RC",
  expert.group.MALFORMED, expert.severity.ERROR)
local ef_bad_length = ProtoExpert.new("mrc.bad_length", "Lengths disagree",
  expert.group.MALFORMED, expert.severity.ERROR)
local ef_tver = ProtoExpert.new("mrc.bad_tver", "Transport version is not 0",
  expert.group.PROTOCOL, expert.severity.WARN)
local ef_nack_code = ProtoExpert.new("mrc.unknown_nack", "Unknown NACK reason",
  expert.group.PROTOCOL, expert.severity.WARN)
local ef_mark = ProtoExpert.new("mrc.bad_mark", "Reserved SACK M value 3",
  expert.group.PROTOCOL, expert.severity.WARN)
local ef_nack = ProtoExpert.new("mrc.nack", "MRC NACK",
  expert.group.SEQUENCE, expert.severity.NOTE)
local ef_rtx = ProtoExpert.new("mrc.retransmission", "Retransmission (BTH rtx)",
  expert.group.SEQUENCE, expert.severity.NOTE)
mrc.experts = { ef_truncated, ef_unknown_opcode, ef_bad_length, ef_tver, ef_nack_code, ef_mark, ef_nack, ef_rtx }

-------------------------------------------------------------------------------
-- Preferences

mrc.prefs.udp_port = Pref.uint("UDP port", 4791, "UDP destination port of MRC (RoCEv2's 4791 by default)")
mrc.prefs.decode_rc = Pref.bool("Decode RoCEv2 RC opcodes", false,
  "Decode IBTA RC opcodes here too instead of handing them to the dissector that held the port (InfiniBand)")
mrc.prefs.has_icrc = Pref.bool("Packets end with an ICRC", true,
  "The last 4 bytes of the UDP payload are the ICRC (as the software device and the simulator send them)")

-------------------------------------------------------------------------------
-- Dissection

local f_udp_srcport = Field.new("udp.srcport")

-- Adds header `name` of `size` bytes at `off`, or flags it truncated.
local function header_tree(tree, tvb, off, size, label)
  if tvb:len() < off + size then
    local t = tree:add(mrc, tvb(off), label .. " [truncated]")
    t:add_proto_expert_info(ef_truncated, label .. " needs " .. size .. " bytes, " ..
      math.max(tvb:len() - off, 0) .. " present")
    return nil
  end
  return tree:add(mrc, tvb(off, size), label)
end

local function type_nh(t, tvb, off, ftype, fnh)
  t:add(F[ftype], tvb(off, 2))
  t:add(F[fnh], tvb(off, 2))
end

local dissectors = {}

function dissectors.aeth(t, tvb, off, info)
  t:add(F.syndrome, tvb(off, 1))
  t:add(F.aeth_msn, tvb(off + 1, 3))
  info[#info + 1] = string.format("MSN=%d", tvb(off + 1, 3):uint())
end

function dissectors.seth(t, tvb, off, info)
  local flags = tvb(off, 2):uint()
  type_nh(t, tvb, off, "sack_type", "sack_nh")
  local mt = t:add(F.sack_mark, tvb(off, 2))
  if bit32.band(bit32.rshift(flags, 5), 3) == 3 then mt:add_proto_expert_info(ef_mark) end
  t:add(F.sack_pr, tvb(off, 2))
  t:add(F.sack_ackoff, tvb(off + 2, 2))
  t:add(F.sack_ev, tvb(off + 4, 4))
  t:add(F.sack_src, tvb(off + 8, 2))
  t:add(F.sack_dst, tvb(off + 10, 2))
  local cack = tvb(off + 13, 3):uint()
  t:add(F.sack_cack, tvb(off + 13, 3))
  t:add(F.sack_cctype, tvb(off + 16, 1))
  t:add(F.sack_ccflags, tvb(off + 16, 1))
  t:add(F.sack_mpr, tvb(off + 17, 1))
  t:add(F.sack_off, tvb(off + 18, 2))
  t:add(F.sack_bitmap, tvb(off + 20, 8))
  local ack_psn = (cack + tvb(off + 2, 2):int()) % 0x1000000
  local base_psn = (cack + tvb(off + 18, 2):int()) % 0x1000000
  t:add(F.sack_ackpsn, tvb(off + 2, 2), ack_psn):set_generated()
  t:add(F.sack_base, tvb(off + 18, 2), base_psn):set_generated()
  -- Bit i of the 64-bit bitmap (i = 0 the least significant) is PSN base + i.
  local psns = {}
  local hi, lo = tvb(off + 20, 4):uint(), tvb(off + 24, 4):uint()
  for i = 0, 63 do
    local word = i < 32 and lo or hi
    if bit32.btest(word, bit32.lshift(1, i % 32)) then psns[#psns + 1] = tostring((base_psn + i) % 0x1000000) end
  end
  t:add(F.sack_psns, tvb(off + 20, 8), table.concat(psns, ",")):set_generated()
  -- CC_STATE
  local c = off + 28
  local ct = t:add(mrc, tvb(c, 8), "CC_STATE")
  ct:add(F.cc_ts, tvb(c, 2))
  ct:add(F.cc_ooo, tvb(c + 2, 2))
  ct:add(F.cc_rc, tvb(c + 4, 1))
  ct:add(F.cc_pen, tvb(c + 4, 1))
  ct:add(F.cc_rcvd, tvb(c + 5, 3))
  info[#info + 1] = string.format("cack=%d ack=%d M=%s%s", cack, ack_psn,
    mark_names[bit32.band(bit32.rshift(flags, 5), 3)], bit32.btest(flags, 2) and " PR" or "")
end

function dissectors.neth(t, tvb, off, info)
  type_nh(t, tvb, off, "nack_type", "nack_nh")
  local code = tvb(off + 2, 1):uint()
  local ct = t:add(F.nack_code, tvb(off + 2, 1))
  if not nack_names[code] then ct:add_proto_expert_info(ef_nack_code, string.format("Unknown NACK reason 0x%02x", code)) end
  t:add(F.nack_vendor, tvb(off + 3, 1))
  t:add(F.nack_ev, tvb(off + 4, 4))
  t:add(F.nack_src, tvb(off + 8, 2))
  t:add(F.nack_dst, tvb(off + 10, 2))
  t:add(F.nack_psn, tvb(off + 13, 3))
  t:add(F.nack_cctype, tvb(off + 16, 1))
  t:add(F.nack_ccflags, tvb(off + 16, 1))
  t:add(F.nack_ts, tvb(off + 18, 2))
  local name = nack_names[code] or string.format("reason 0x%02x", code)
  t:add_proto_expert_info(ef_nack, "NACK " .. name)
  info[#info + 1] = string.format("%s nack_psn=%d", name, tvb(off + 13, 3):uint())
end

local function ts_tail(t, tvb, off, falt, ffmt)
  t:add(F[falt], tvb(off, 2))
  t:add(F[ffmt], tvb(off, 2))
end

function dissectors.peth(t, tvb, off, info)
  type_nh(t, tvb, off, "probe_type", "probe_nh")
  t:add(F.probe_vendor, tvb(off + 3, 1))
  t:add(F.probe_id, tvb(off + 4, 2))
  t:add(F.probe_src, tvb(off + 8, 2))
  t:add(F.probe_dst, tvb(off + 10, 2))
  t:add(F.probe_ts, tvb(off + 12, 2))
  ts_tail(t, tvb, off + 14, "probe_alt", "probe_fmt")
  info[#info + 1] = string.format("probe_id=%d", tvb(off + 4, 2):uint())
end

function dissectors.erth(t, tvb, off, info)
  type_nh(t, tvb, off, "epreq_type", "epreq_nh")
  t:add(F.epreq_op, tvb(off, 2))
  t:add(F.epreq_vendor, tvb(off + 3, 1))
  t:add(F.epreq_mask, tvb(off + 4, 4))
  t:add(F.epreq_ts, tvb(off + 12, 2))
  ts_tail(t, tvb, off + 14, "epreq_alt", "epreq_fmt")
  local op = bit32.band(tvb(off, 2):uint(), 3)
  info[#info + 1] = string.format("%s mask=0x%x", ep_op_names[op] or tostring(op), tvb(off + 4, 4):uint())
end

function dissectors.eeth(t, tvb, off, info)
  type_nh(t, tvb, off, "epresp_type", "epresp_nh")
  t:add(F.epresp_op, tvb(off, 2))
  t:add(F.epresp_vendor, tvb(off + 3, 1))
  t:add(F.epresp_ev, tvb(off + 4, 4))
  t:add(F.epresp_port, tvb(off + 8, 1))
  t:add(F.epresp_svc, tvb(off + 9, 1))
  t:add(F.epresp_ts, tvb(off + 28, 2))
  local op = bit32.rshift(bit32.band(tvb(off, 2):uint(), 0x30), 4)
  info[#info + 1] = ep_op_names[op] or tostring(op)
end

function dissectors.cnp(t, tvb, off, info)
  t:add(F.cnp, tvb(off, 16))
end

local ext_labels = {
  aeth = "AETH", seth = "SETH (Reliability SACK)", neth = "NETH (Reliability NACK)",
  peth = "PETH (Reliability probe)", erth = "ERTH (Endpoint request)", eeth = "EETH (Endpoint response)",
  cnp = "CNP",
}

-- Dissects one MRC packet (the UDP payload). Returns the bytes consumed.
local function dissect_mrc(tvb, pinfo, tree)
  local len = tvb:len()
  pinfo.cols.protocol = "MRC"
  local root = tree:add(mrc, tvb(), "Multipath Reliable Connection")
  local srcport = f_udp_srcport()
  if srcport then root:add(F.ev, srcport.value):set_generated() end
  if len < BTH_BYTES then
    root:add_proto_expert_info(ef_truncated, "BTH needs 12 bytes, " .. len .. " present")
    pinfo.cols.info = "MRC [truncated BTH]"
    return len
  end
  local opcode = tvb(0, 1):uint()
  local op = opcodes[opcode]
  local name = opcode_names[opcode] or string.format("opcode 0x%02x", opcode)
  local psn = tvb(9, 3):uint()
  local dqpn = tvb(5, 3):uint()
  local rtx = bit32.btest(tvb(8, 1):uint(), 0x20)
  local ts = bit32.btest(tvb(8, 1):uint(), 0x10)
  local padcnt = bit32.rshift(bit32.band(tvb(1, 1):uint(), 0x30), 4)

  local bth = root:add(mrc, tvb(0, BTH_BYTES), "BTH")
  local ot = bth:add(F.opcode, tvb(0, 1))
  bth:add(F.se, tvb(1, 1))
  bth:add(F.migreq, tvb(1, 1))
  bth:add(F.pad, tvb(1, 1))
  local tt = bth:add(F.tver, tvb(1, 1))
  if bit32.band(tvb(1, 1):uint(), 0x0F) ~= 0 then tt:add_proto_expert_info(ef_tver) end
  bth:add(F.pkey, tvb(2, 2))
  bth:add(F.resv8a, tvb(4, 1))
  bth:add(F.dqpn, tvb(5, 3))
  bth:add(F.ackreq, tvb(8, 1))
  local rt = bth:add(F.rtx, tvb(8, 1))
  if rtx and op and not op.rc then rt:add_proto_expert_info(ef_rtx) end
  bth:add(F.ts, tvb(8, 1))
  local sec = bit32.btest(tvb(8, 1):uint(), 0x08)
  bth:add(F.sec, tvb(8, 1))
  bth:add(F.psn, tvb(9, 3))
  root:append_text(string.format(", %s, QP 0x%06x, PSN %d", name, dqpn, psn))

  local info = { name, string.format("QP=0x%06x PSN=%d", dqpn, psn) }
  if rtx and op and not op.rc then info[#info + 1] = "rtx" end

  local function finish()
    pinfo.cols.info = table.concat(info, " ")
    return len
  end

  if not op then
    ot:add_proto_expert_info(ef_unknown_opcode, string.format("Unknown opcode 0x%02x", opcode))
    return finish()
  end

  local icrc = mrc.prefs.has_icrc and ICRC_BYTES or 0
  local off = BTH_BYTES
  local encrypted = false
  if sec then
    local t = header_tree(root, tvb, off, SECETH_BYTES, "SECETH (secure QP)")
    if not t then return finish() end
    t:add(F.sec_keyid, tvb(off, 1))
    t:add(F.sec_enc, tvb(off + 1, 1))
    t:add(F.sec_counter, tvb(off + 2, 6), tvb(off + 2, 6):uint64())
    t:add(F.sec_tag, tvb(off + 8, 16))
    encrypted = bit32.btest(tvb(off + 1, 1):uint(), 0x80)
    info[#info + 1] = string.format("sec ctr=%s%s", tostring(tvb(off + 2, 6):uint64()), encrypted and " enc" or "")
    off = off + SECETH_BYTES
  end
  if op.data then
    if op.meth then
      local t = header_tree(root, tvb, off, 4, "METH")
      if not t then return finish() end
      t:add(F.rqmsn, tvb(off, 2))
      t:add(F.msn, tvb(off + 2, 2))
      info[#info + 1] = string.format("MSN=%d", tvb(off + 2, 2):uint())
      off = off + 4
      if ts then
        t = header_tree(root, tvb, off, 4, "TSETH")
        if not t then return finish() end
        t:add(F.tseth_ts, tvb(off, 2))
        ts_tail(t, tvb, off + 2, "tseth_alt", "tseth_fmt")
        off = off + 4
      end
    end
    if op.reth then
      local t = header_tree(root, tvb, off, 16, "RETH")
      if not t then return finish() end
      t:add(F.va, tvb(off, 8))
      t:add(F.rkey, tvb(off + 8, 4))
      t:add(F.dmalen, tvb(off + 12, 4))
      info[#info + 1] = string.format("VA=0x%s len=%d", tostring(tvb(off, 8):uint64():tohex()),
        tvb(off + 12, 4):uint())
      off = off + 16
    end
    if op.imm then
      local t = header_tree(root, tvb, off, 4, "ImmDt")
      if not t then return finish() end
      t:add(F.imm, tvb(off, 4))
      off = off + 4
    end
    local rest = len - off - icrc
    if rest < padcnt then
      root:add_proto_expert_info(ef_bad_length, string.format("%d bytes after the headers, pad count %d and %d ICRC bytes",
        len - off, padcnt, icrc))
      return finish()
    end
    local plen = rest - padcnt
    root:add(F.payload_len, plen):set_generated()
    if plen > 0 then
      local pt = root:add(F.payload, tvb(off, plen))
      if encrypted then pt:append_text(" (encrypted)") end
    end
    if padcnt > 0 then root:add(F.padding, tvb(off + plen, padcnt)) end
    info[#info + 1] = string.format("payload=%d", plen)
    off = off + rest
  else
    local size = ext_sizes[op.ext]
    local t = header_tree(root, tvb, off, size, ext_labels[op.ext])
    if not t then return finish() end
    dissectors[op.ext](t, tvb, off, info)
    off = off + size
    if len - off ~= icrc then
      root:add_proto_expert_info(ef_bad_length, string.format("%d bytes after %s, expected %d (ICRC)",
        len - off, ext_labels[op.ext], icrc))
      return finish()
    end
  end
  if icrc > 0 then root:add_le(F.icrc, tvb(off, ICRC_BYTES)) end
  return finish()
end

-- The dissector that held the port before us (InfiniBand's RoCEv2), for
-- packets that are not MRC.
local previous = nil
local registered_port = nil
local udp_table = DissectorTable.get("udp.port")

function mrc.dissector(tvb, pinfo, tree)
  local opcode = tvb:len() >= 1 and tvb(0, 1):uint() or nil
  local op = opcode and opcodes[opcode]
  if op and op.rc and not mrc.prefs.decode_rc and previous then
    return previous:call(tvb, pinfo, tree)
  end
  return dissect_mrc(tvb, pinfo, tree)
end

local function register_port()
  local port = mrc.prefs.udp_port
  if registered_port == port then return end
  if registered_port then
    udp_table:remove(registered_port, mrc)
    if previous then udp_table:add(registered_port, previous) end
  end
  previous = udp_table:get_dissector(port)
  udp_table:add(port, mrc)
  registered_port = port
end

function mrc.prefs_changed() register_port() end

-- Heuristic: MRC opcode, TVer 0, P_Key 0xFFFF, and the header chain fits.
local function heuristic(tvb, pinfo, tree)
  local len = tvb:len()
  if len < BTH_BYTES + ICRC_BYTES then return false end
  local opcode = tvb(0, 1):uint()
  local op = opcodes[opcode]
  if not op or op.rc then return false end
  if bit32.band(tvb(1, 1):uint(), 0x0F) ~= 0 or tvb(2, 2):uint() ~= 0xFFFF then return false end
  local need = BTH_BYTES + (bit32.btest(tvb(8, 1):uint(), 0x08) and SECETH_BYTES or 0)
  if op.data then
    need = need + 4 + 16 + (op.imm and 4 or 0) + (bit32.btest(tvb(8, 1):uint(), 0x10) and 4 or 0)
    if len < need + ICRC_BYTES then return false end
  elseif len ~= need + ext_sizes[op.ext] + ICRC_BYTES then
    return false
  end
  dissect_mrc(tvb, pinfo, tree)
  return true
end

register_port()
udp_table:add_for_decode_as(mrc)
mrc:register_heuristic("udp", heuristic)
